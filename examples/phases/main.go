// Command phases runs the documents' pattern of a phased job across
// devices: phase 1 on devices 0, 1 and 2 (a one-stage pipeline each, its
// ring kernel scaling messages by the device's factor), then a barrier
// whose participants are the three ring kernels and the host, then phase
// 2. The host sends each kernel its phase-1 messages, marks the phase
// boundary (collective.Barrier.Mark) and sends the phase-2 messages at
// once, queued behind the mark; each kernel takes its phase 1, arrives at
// the barrier on its device and waits there. The host collects and checks
// the phase-1 results, then arrives itself; only then may any kernel take
// a phase-2 message. The check: every result right, and every phase-2
// result delivered after the host arrived (which fails without the
// barrier: phase 2 would go through while the host was still reading
// phase 1).
//
//	go run ./examples/phases -backend sim -messages 500
//	go run ./examples/phases -backend cuda   # a GPU, or the emulated driver (make run-emulated shows how)
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	ra "github.com/ringactor/ringactor/runtime"
	"github.com/ringactor/ringactor/runtime/collective"
)

type options struct {
	backend  string
	devices  []int
	messages int // per device per phase
}

func main() {
	var o options
	fs := flag.NewFlagSet("phases", flag.ExitOnError)
	fs.StringVar(&o.backend, "backend", "auto", "auto, sim or cuda")
	devs := fs.String("devices", "0,1,2", "device ids of the phase kernels (a device may repeat)")
	fs.IntVar(&o.messages, "messages", 500, "messages per device per phase (1 to 4096)")
	fs.Parse(os.Args[1:])
	var err error
	if o.devices, err = parseDevices(*devs); err != nil {
		fmt.Fprintln(os.Stderr, "phases:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, o, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "phases:", err)
		os.Exit(1)
	}
}

func parseDevices(s string) ([]int, error) {
	var ds []int
	for _, f := range strings.Split(s, ",") {
		d, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || d < 0 {
			return nil, fmt.Errorf("-devices %q: %q is no device id", s, f)
		}
		ds = append(ds, d)
	}
	return ds, nil
}

// worker is one device's phase kernel and what came back from it.
type worker struct {
	dev    int
	factor float32
	p      *ra.Pipeline
	name   string // its barrier participant's name

	mu     sync.Mutex
	got    map[uint64]float32
	at     map[uint64]time.Time // when each result was delivered
	phase1 chan struct{}        // closed once every phase-1 result is in
	n      int
}

func (w *worker) deliver(r ra.Result) {
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(r.Floats) > 0 {
		w.got[r.ID] = r.Floats[0]
	}
	w.at[r.ID] = now
	if r.ID <= uint64(w.n) {
		n1 := 0
		for id := range w.got {
			if id <= uint64(w.n) {
				n1++
			}
		}
		if n1 == w.n {
			close(w.phase1)
		}
	}
}

// input is message id's value (ids 1..n phase 1, n+1..2n phase 2).
func input(id uint64) float32 { return float32(id%1000) - 250 }

func run(ctx context.Context, o options, out io.Writer) error {
	if o.messages < 1 || o.messages > 4096 {
		return fmt.Errorf("-messages %d: want 1 to 4096", o.messages)
	}
	if len(o.devices) == 0 {
		return errors.New("no devices")
	}
	rt, err := ra.New(ra.Config{Devices: ra.DeviceOptions{Backend: o.backend, SimDevices: 3}})
	if err != nil {
		return err
	}
	defer rt.Close()
	// Room for both phases in each ingress: phase 2 waits there, behind
	// the mark, while the host still reads phase 1.
	capacity := 64
	for capacity < 2*o.messages {
		capacity *= 2
	}
	var ws []*worker
	var stages []collective.StageParticipant
	for i, d := range o.devices {
		w := &worker{dev: d, factor: float32(i + 2), got: map[uint64]float32{}, at: map[uint64]time.Time{}, phase1: make(chan struct{}), n: o.messages}
		w.p, err = rt.Build(ctx, ra.PipelineSpec{Name: fmt.Sprintf("phases%d", i),
			Stages:  []ra.StageSpec{{Name: "scale", Op: "scale", Params: []float32{w.factor}, Device: d, Capacity: capacity}},
			Deliver: ra.Sink{Func: w.deliver}})
		if err != nil {
			return err
		}
		defer w.p.Close(context.Background(), false)
		if err := w.p.Start(ctx); err != nil {
			return err
		}
		ws = append(ws, w)
		stages = append(stages, collective.StageParticipant{Pipeline: w.p, Stage: "scale"})
	}
	b, err := collective.NewBarrier(rt, collective.BarrierSpec{Name: "phases", Participants: []string{"host"}, Stages: stages, Timeout: time.Minute})
	if err != nil {
		return err
	}
	defer b.Close()
	for i, name := range b.Flags().Names()[1:] {
		ws[i].name = name
	}
	start := time.Now()
	send := func(w *worker, from, to int) error {
		ds := make([]ra.Data, 0, to-from)
		for id := from; id <= to; id++ {
			ds = append(ds, ra.Data{ID: uint64(id), Floats: []float32{input(uint64(id))}})
		}
		_, err := w.p.SendBatch(ctx, ds)
		return err
	}
	n := o.messages
	for _, w := range ws { // phase 1
		if err := send(w, 1, n); err != nil {
			return err
		}
	}
	if err := b.Mark(ctx, 1); err != nil {
		return err
	}
	for _, w := range ws { // phase 2, at once: queued behind the mark
		if err := send(w, n+1, 2*n); err != nil {
			return err
		}
	}
	// The host's own phase 1: every phase-1 result, checked.
	mismatches := 0
	for _, w := range ws {
		select {
		case <-w.phase1:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	arrived := time.Now()
	if err := b.Await(ctx, "host", 1); err != nil {
		return err
	}
	released := time.Now()
	for _, w := range ws {
		if err := w.p.Close(ctx, true); err != nil {
			return err
		}
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(out, "phases on %s: %d kernels (devices %v) and the host at barrier %q, %d messages per kernel per phase\n",
		rt.Backend().Name(), len(ws), o.devices, "phases", n)
	fmt.Fprintln(tw, "device\tparticipant\tfactor\tphase 1\tphase 2\tlast phase 1 (ms)\tfirst phase 2 (ms)\tearly phase 2\t")
	early := 0
	for _, w := range ws {
		var last1, first2 time.Time
		var n1, n2, e int
		w.mu.Lock()
		for id := uint64(1); id <= uint64(2*n); id++ {
			v, ok := w.got[id]
			if !ok || v != w.factor*input(id) {
				mismatches++
				continue
			}
			at := w.at[id]
			if id <= uint64(n) {
				n1++
				if at.After(last1) {
					last1 = at
				}
				continue
			}
			n2++
			if first2.IsZero() || at.Before(first2) {
				first2 = at
			}
			if !at.After(arrived) {
				e++ // processed before the host arrived: the barrier did not hold
			}
		}
		w.mu.Unlock()
		early += e
		fmt.Fprintf(tw, "%d\t%s\t%g\t%d\t%d\t%.2f\t%.2f\t%d\t\n", w.dev, w.name, w.factor, n1, n2, ms(last1.Sub(start)), ms(first2.Sub(start)), e)
	}
	tw.Flush()
	fmt.Fprintf(out, "host arrived at %.2f ms (after reading phase 1), released at %.2f ms\n", ms(arrived.Sub(start)), ms(released.Sub(start)))
	fmt.Fprintf(out, "verified %d results: %d mismatches; %d phase-2 results before the host arrived\n", 2*n*len(ws), mismatches, early)
	if mismatches > 0 || early > 0 {
		return fmt.Errorf("%d mismatches, %d phase-2 results before every participant finished phase 1", mismatches, early)
	}
	return nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
