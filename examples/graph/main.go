// Command graph runs a typed actor graph on ring kernels and checks every
// result against Go:
//
//	                 ┌→ left  (keyed_scale ×2) ─┐
//	router (pass) ───┤      by key              ├→ merge (pass) ──┬→ total   (keyed_sum):   [key, Σ values]
//	                 └→ right (keyed_scale ×2) ─┘      copy to all └→ counter (keyed_count): the key's running count
//
// Each message is a kernels.Keyed (a key, a count and eight float32
// values), a fixed-layout struct that travels as its own bytes and that
// the device stages read as struct ra_keyed. The router sends each key
// always down the same branch (left and right run on different devices
// where there are), so the stateful counter sees each key's messages in
// order; merge copies every message to both exits. Every 50th message
// goes in as a request and its response is checked; one float vector is
// sent to show a wrong-type dead letter. It prints the per-stage latency
// table and the account, and exits 1 on any mismatch. -trace, -metrics
// (-metrics-addr) and -pprof export spans and metrics and serve pprof
// (package internal/otelsetup).
//
//	go run ./examples/graph -messages 20000
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/ringactor/ringactor/internal/otelsetup"
	"github.com/ringactor/ringactor/kernels"
	ra "github.com/ringactor/ringactor/runtime"
)

type options struct {
	messages int
	backend  string
	sample   float64
	quiet    bool
	tel      *otelsetup.Flags // -trace, -metrics, -metrics-addr, -pprof
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "graph:", err)
		os.Exit(1)
	}
}

func parse(args []string, errOut io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("graph", flag.ContinueOnError)
	fs.SetOutput(errOut)
	fs.IntVar(&o.messages, "messages", 20000, "messages to send")
	fs.StringVar(&o.backend, "backend", "auto", "device backend: auto, cuda or sim")
	fs.Float64Var(&o.sample, "sample", 0.1, "fraction of messages traced for the latency table, 0 to 1")
	fs.BoolVar(&o.quiet, "quiet", false, "no progress lines")
	o.tel = otelsetup.Register(fs, "graph")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if o.messages < 1 || o.sample < 0 || o.sample > 1 {
		return o, errors.New("want -messages >= 1 and -sample from 0 to 1")
	}
	return o, o.tel.Check()
}

// keyed is message id's input: 13 keys, values from the id.
func keyed(id uint64) kernels.Keyed {
	k := kernels.Keyed{Key: uint32(id*7919) % 13}
	for j := range k.Values {
		k.Values[j] = float32(id%1000)/8 + float32(j)
	}
	return k
}

// check compares results with the Go reference: total's [key, Σ 2v]
// and counter's running count of the key (the messages of a key are sent
// in id order, and the graph keeps a key's order: one branch, in-order
// links, one stateful consumer).
type check struct {
	mu         sync.Mutex
	counts     map[uint64]uint32 // message id -> its key's count at it
	ends       map[uint64]int    // results per message id (2: total and counter)
	mismatches int
	firstBad   string
}

func newCheck(n int) *check {
	c := &check{counts: map[uint64]uint32{}, ends: map[uint64]int{}}
	seen := map[uint32]uint32{}
	for id := uint64(1); id <= uint64(n); id++ {
		k := keyed(id).Key
		seen[k]++
		c.counts[id] = seen[k]
	}
	return c
}

func (c *check) bad(format string, a ...any) {
	c.mismatches++
	if c.firstBad == "" {
		c.firstBad = fmt.Sprintf(format, a...)
	}
}

func (c *check) result(r ra.Result) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ends[r.ID]++
	in := keyed(r.ID)
	switch r.Stage {
	case "total":
		v, err := ra.As[[]float32](r)
		var s float32
		for _, x := range in.Values {
			s += x * 2 // in order, as the stages add
		}
		if want := []float32{float32(in.Key), s}; err != nil || !slices.Equal(v, want) {
			c.bad("message %d at total: %v (%v), want %v", r.ID, v, err, want)
		}
	case "counter":
		v, err := ra.As[kernels.Keyed](r)
		want := in
		want.Count = c.counts[r.ID]
		for j := range want.Values {
			want.Values[j] *= 2
		}
		if err != nil || v != want {
			c.bad("message %d at counter: %+v (%v), want %+v", r.ID, v, err, want)
		}
	default:
		c.bad("message %d left by stage %q", r.ID, r.Stage)
	}
}

func run(ctx context.Context, args []string, out, errOut io.Writer) error {
	o, err := parse(args, errOut)
	if err != nil {
		return err
	}
	tel, err := o.tel.Start(ctx, out)
	if err != nil {
		return err
	}
	defer tel.Shutdown(context.Background())
	rt, err := ra.New(ra.Config{Devices: ra.DeviceOptions{Backend: o.backend}, TracerProvider: tel.TracerProvider, MeterProvider: tel.MeterProvider})
	if err != nil {
		return err
	}
	defer rt.Close()
	fmt.Fprintln(errOut, rt.Registry().Note())
	devs := len(rt.Registry().GPUs())
	dev := func(i int) int { return i % devs }
	chk := newCheck(o.messages)
	var deadMu sync.Mutex
	var dead []ra.DeadLetter
	spec := ra.PipelineSpec{Name: "graph", SampleRatio: o.sample,
		Stages: []ra.StageSpec{
			{Name: "router", Op: "pass", Device: dev(0), Route: ra.RouteKey, KeyOffset: 0, To: []string{"left", "right"}},
			{Name: "left", Op: "keyed_scale", Params: []float32{2}, Device: dev(1), To: []string{"merge"}},
			{Name: "right", Op: "keyed_scale", Params: []float32{2}, Device: dev(2), To: []string{"merge"}},
			{Name: "merge", Op: "pass", Device: dev(0), Route: ra.RouteAll, To: []string{"total", "counter"}},
			{Name: "total", Op: "keyed_sum", Device: dev(1)},
			{Name: "counter", Op: "keyed_count", Stateful: true, Device: dev(2)},
		},
		Deliver:      ra.Sink{Func: chk.result},
		OnDeadLetter: func(d ra.DeadLetter) { deadMu.Lock(); dead = append(dead, d); deadMu.Unlock() },
	}
	p, err := rt.Build(ctx, spec)
	if err != nil {
		return err
	}
	defer p.Close(context.Background(), false)
	if err := p.Start(ctx); err != nil {
		return err
	}
	fmt.Fprintf(out, "graph %q on %s backend, %d device(s)\n%s\n", spec.Name, rt.Registry().BackendName(), devs, p.Describe())

	start := time.Now()
	requests := 0
	last := start
	for id := uint64(1); id <= uint64(o.messages); id++ {
		d := ra.Data{ID: id, Value: keyed(id)}
		if id%50 == 0 {
			// A request: answered by the first of its two copies to leave
			// (the other goes to the sink as usual).
			r, err := p.Request(ctx, d)
			if err != nil {
				return fmt.Errorf("request %d: %w", id, err)
			}
			chk.result(r)
			requests++
		} else if err := p.Send(ctx, d); err != nil {
			return err
		}
		if now := time.Now(); !o.quiet && now.Sub(last) >= time.Second {
			last = now
			st := p.Stats()
			fmt.Fprintf(errOut, "[%4.1fs] sent %d/%d, delivered %d\n", now.Sub(start).Seconds(), st.Sent, o.messages, st.Delivered)
		}
	}
	// A float vector is not a Keyed: the router takes what the branches
	// take, so it is refused at the door, as a dead letter.
	if err := p.Send(ctx, ra.Data{ID: uint64(o.messages) + 1, Floats: []float32{1, 2}}); !errors.Is(err, ra.ErrWrongType) {
		chk.bad("a float vector sent into the Keyed graph: %v, want a wrong-type error", err)
	}
	tel.Flush(ctx) // -metrics: the pipeline's counters before it closes
	if err := p.Close(ctx, true); err != nil {
		return err
	}
	elapsed := time.Since(start)
	st := p.Stats()
	report(out, p, st, elapsed)

	chk.mu.Lock()
	defer chk.mu.Unlock()
	for id := uint64(1); id <= uint64(o.messages); id++ {
		if chk.ends[id] != 2 {
			chk.bad("message %d left %d times, want 2 (total and counter)", id, chk.ends[id])
		}
	}
	deadMu.Lock()
	if len(dead) != 1 || dead[0].Reason != ra.ReasonWrongType {
		chk.bad("dead letters %v, want the one float vector as wrong type", dead)
	} else {
		fmt.Fprintf(out, "dead letter: %v\n", dead[0])
	}
	deadMu.Unlock()
	if st.Sent+st.Copied != st.Delivered+st.DeadLettered+st.InFlight || st.InFlight != 0 || st.Copied != uint64(o.messages) {
		chk.bad("account does not conserve: %+v", st)
	}
	fmt.Fprintf(out, "%d requests answered and checked\n", requests)
	fmt.Fprintf(out, "verified %d results against the Go reference: %d mismatches\n", 2*o.messages, chk.mismatches)
	if chk.mismatches > 0 {
		return fmt.Errorf("%d mismatches; first: %s", chk.mismatches, chk.firstBad)
	}
	return nil
}

func report(out io.Writer, p *ra.Pipeline, st ra.PipelineStats, elapsed time.Duration) {
	fmt.Fprintln(out)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "stage\tdevice\tmessages\tsampled\twait p50\twait p99\tservice p50\tservice p99\t")
	lat := p.Latency()
	for i, s := range st.Stages {
		l := lat[i]
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%v\t%v\t%v\t%v\t\n", s.Stage, s.Device, s.Processed, l.Samples,
			l.QueueWait.P50, l.QueueWait.P99, l.Service.P50, l.Service.P99)
	}
	tw.Flush()
	fmt.Fprintf(out, "\nsent %d + copied %d = delivered %d + dead-lettered %d + in flight %d, in %v (%.0f results/s)\n",
		st.Sent, st.Copied, st.Delivered, st.DeadLettered, st.InFlight, elapsed.Round(time.Millisecond), float64(st.Delivered)/elapsed.Seconds())
}
