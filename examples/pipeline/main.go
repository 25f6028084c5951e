// Command pipeline is ringactor's main job: the multi-GPU guide's 3-stage
// pipeline (x*2 → sqrt → +1), one stage per device, with every result
// checked against the Go reference and a per-stage latency table.
//
//	go run ./examples/pipeline -devices 0,1,2 -messages 200000 -payload 16
//
// -devices names a device per stage: a GPU's id or "cpu", the host's CPU
// run as a device beside the GPUs (-devices 0,cpu,2). The default, auto,
// takes three GPUs each joined to the next by the fastest link the
// topology has (Registry.Chain), or one GPU for all three.
//
// -remote-stage2 runs the middle stage in a second process on this machine
// (the same program started again as cluster node "stage2"), joined over
// loopback through protoactor remote and cluster.
//
// Without a GPU it runs on simulated devices (RINGACTOR_SIM_DEVICES,
// RINGACTOR_SIM_P2P); -backend cuda insists on the GPUs. -trace stdout
// prints sampled messages' spans; -trace otlp exports them as the standard
// environment says (OTEL_TRACES_EXPORTER, OTEL_EXPORTER_OTLP_PROTOCOL,
// OTEL_EXPORTER_OTLP_ENDPOINT, ...). -trace-file PATH writes them to a
// file (the stdout exporter's JSON) and then checks that every stage span
// lies within its message's span, printing PASS or FAIL (and failing the
// run on FAIL). -metrics stdout|otlp|prometheus exports the metrics
// (-metrics-addr: the Prometheus endpoint), -pprof ADDR serves pprof
// (package internal/otelsetup).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/ringactor/ringactor/internal/demo"
	"github.com/ringactor/ringactor/internal/devlist"
	"github.com/ringactor/ringactor/internal/nodeproc"
	"github.com/ringactor/ringactor/internal/otelsetup"
	"github.com/ringactor/ringactor/internal/stdio"
	"github.com/ringactor/ringactor/kernels"
	ra "github.com/ringactor/ringactor/runtime"
	"github.com/ringactor/ringactor/runtime/cluster"
)

type options struct {
	devices   string // devlist.Parse's form
	messages  int
	payload   int
	backend   string
	tel       *otelsetup.Flags // -trace, -metrics, -metrics-addr, -pprof
	traceFile string
	sample    float64
	batch     int
	quiet     bool
	remote    bool
}

// job is what the main job drives: a Pipeline, or a cluster.Pipeline when
// stage 2 runs in another process.
type job interface {
	SendBatch(ctx context.Context, ds []ra.Data) (int, error)
	Close(ctx context.Context, drain bool) error
	Stats() ra.PipelineStats
	Latency() []ra.StageLatency
	Describe() string
}

func main() {
	out := stdio.Claim() // stdout is for the job's own output
	nodeproc.Main()      // -remote-stage2 starts this program again as the stage-2 node
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], out, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "pipeline:", err)
		os.Exit(1)
	}
}

func parse(args []string, errOut io.Writer) (options, error) {
	fs := flag.NewFlagSet("pipeline", flag.ContinueOnError)
	fs.SetOutput(errOut)
	var o options
	devs := fs.String("devices", "auto", `device ids of the three stages, or "cpu" (one puts all three on it); auto: three GPUs, each joined to the next by the fastest link`)
	fs.IntVar(&o.messages, "messages", 200000, "messages to send")
	fs.IntVar(&o.payload, "payload", 16, "float32s per message (at most 56 with the default slot size)")
	fs.StringVar(&o.backend, "backend", "auto", "auto, sim or cuda")
	o.tel = otelsetup.Register(fs, "pipeline")
	fs.StringVar(&o.traceFile, "trace-file", "", "also write sampled spans to this file (stdout exporter JSON) and check them")
	fs.Float64Var(&o.sample, "sample", 0.01, "fraction of messages traced (0 to 1)")
	fs.IntVar(&o.batch, "batch", 64, "messages per ingress publish")
	fs.BoolVar(&o.quiet, "quiet", false, "no progress line")
	fs.BoolVar(&o.remote, "remote-stage2", false, "run stage 2 in a second process (a cluster node over loopback)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	// -devices is read against the registry (devlist.Parse), which
	// names an id that is no device, and the ids there are, before it
	// counts the list: counting here first would hide the unknown id.
	o.devices = *devs
	switch {
	case o.messages < 1:
		return o, fmt.Errorf("-messages %d: send at least one", o.messages)
	case o.payload < 1 || o.payload > 56:
		return o, fmt.Errorf("-payload %d: 1 to 56 floats fit the default slot", o.payload)
	case o.sample < 0 || o.sample > 1:
		return o, fmt.Errorf("-sample %g: a fraction from 0 to 1", o.sample)
	case o.batch < 1:
		return o, fmt.Errorf("-batch %d: at least 1", o.batch)
	}
	return o, o.tel.Check()
}

// input is message id's payload: deterministic, so results are checked
// without keeping the inputs.
func input(id uint64, j int) float32 { return float32((id*31+uint64(j)*7)%1000) / 8 }

// reference computes the pipeline's result with the ops' Go references.
type reference struct{ ops []kernels.GoFunc }

func newReference() (*reference, error) {
	r := &reference{}
	for _, name := range []string{"scale", "sqrt", "offset"} {
		op, err := kernels.Lookup(name)
		if err != nil {
			return nil, err
		}
		r.ops = append(r.ops, op.Go)
	}
	return r, nil
}

func (r *reference) eval(in []float32) ([]float32, error) {
	params := [][]float32{{2}, nil, {1}}
	cur := append([]float32(nil), in...)
	for i, f := range r.ops {
		out := make([]float32, len(cur))
		n, err := f(params[i], nil, cur, out)
		if err != nil {
			return nil, err
		}
		cur = out[:n]
	}
	return cur, nil
}

// telemetry starts what -trace, -metrics and -pprof ask for, and the
// -trace-file exporter when file is not nil. flush exports what is
// buffered and stops it all; it may be called more than once.
func telemetry(ctx context.Context, tel *otelsetup.Flags, file io.Writer, out io.Writer) (*otelsetup.Setup, func(), error) {
	var extra []sdktrace.TracerProviderOption
	if file != nil {
		exp, err := stdouttrace.New(stdouttrace.WithWriter(file))
		if err != nil {
			return nil, nil, fmt.Errorf("trace file exporter: %w", err)
		}
		// The file is checked span by span: a full queue waits rather
		// than dropping spans (the default queue holds 2048).
		extra = append(extra, sdktrace.WithBatcher(exp, sdktrace.WithMaxQueueSize(1<<16), sdktrace.WithBlocking()))
	}
	setup, err := tel.Start(ctx, out, extra...)
	if err != nil {
		return nil, nil, err
	}
	return setup, func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		setup.Shutdown(sctx)
	}, nil
}

func run(ctx context.Context, args []string, out, errOut io.Writer) error {
	o, err := parse(args, errOut)
	if err != nil {
		return err
	}
	ref, err := newReference()
	if err != nil {
		return err
	}
	var traceFile *os.File
	if o.traceFile != "" {
		if traceFile, err = os.Create(o.traceFile); err != nil {
			return fmt.Errorf("-trace-file: %w", err)
		}
		defer traceFile.Close()
	}
	tel, flush, err := telemetry(ctx, o.tel, fileOrNil(traceFile), out)
	if err != nil {
		return err
	}
	defer flush()
	// The library prints nothing itself: the note on the devices (which
	// Config.Logger would get, with protoactor's logs) is printed here.
	rt, err := ra.New(ra.Config{Devices: ra.DeviceOptions{Backend: o.backend}, TracerProvider: tel.TracerProvider, MeterProvider: tel.MeterProvider})
	if err != nil {
		return err
	}
	defer rt.Close()
	fmt.Fprintln(errOut, rt.Registry().Note())

	var mismatches, checked atomic.Uint64
	var firstBad atomic.Pointer[string]
	reg := rt.Registry()
	id := func(name string) (int, error) { d, err := reg.Lookup(name); return d.ID, err }
	ids, err := devlist.Parse(o.devices, 3, id, reg.Chain, ra.ErrNoDevice)
	if err != nil {
		return fmt.Errorf("-devices: %w", err)
	}
	spec := demo.Guide("guide", [3]int(ids))
	spec.SampleRatio = o.sample
	spec.Deliver = ra.Sink{Func: func(r ra.Result) {
		in := make([]float32, o.payload)
		for j := range in {
			in[j] = input(r.ID, j)
		}
		want, _ := ref.eval(in)
		checked.Add(1)
		for j := range want {
			if len(r.Floats) != len(want) || math.Abs(float64(r.Floats[j]-want[j])) > 1e-6*math.Max(1, math.Abs(float64(want[j]))) {
				if mismatches.Add(1) == 1 {
					s := fmt.Sprintf("message %d: got %v, want %v", r.ID, r.Floats, want)
					firstBad.Store(&s)
				}
				break
			}
		}
	}}
	var p job
	if o.remote {
		cp, leave, err := buildRemote(ctx, rt, spec, errOut)
		if err != nil {
			return err
		}
		defer leave()
		p = cp
	} else {
		lp, err := rt.Build(ctx, spec)
		if err != nil {
			return err
		}
		if err := lp.Start(ctx); err != nil {
			lp.Close(context.Background(), false)
			return err
		}
		p = lp
	}
	fmt.Fprint(out, p.Describe())

	start := time.Now()
	progressDone := make(chan struct{})
	if !o.quiet {
		go progress(p, o.messages, errOut, progressDone)
	}
	sendErr := send(ctx, p, o)
	closeCtx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tel.Flush(closeCtx) // -metrics: the pipeline's counters before it closes
	drain := sendErr == nil
	closeErr := p.Close(closeCtx, drain)
	elapsed := time.Since(start)
	close(progressDone)

	st := p.Stats()
	report(out, p, st, elapsed)
	fmt.Fprintf(out, "verified %d results against the Go reference: %d mismatches\n", checked.Load(), mismatches.Load())
	var spanErr error
	if traceFile != nil {
		flush()
		spanErr = checkSpanFile(out, o.traceFile)
	}
	switch {
	case sendErr != nil:
		return sendErr
	case closeErr != nil:
		return closeErr
	case mismatches.Load() > 0:
		return fmt.Errorf("%d results differ from the Go reference; first: %s", mismatches.Load(), *firstBad.Load())
	case st.Delivered != uint64(o.messages) || st.DeadLettered != 0:
		return fmt.Errorf("sent %d, delivered %d, dead-lettered %d: messages were lost", st.Sent, st.Delivered, st.DeadLettered)
	case spanErr != nil:
		return spanErr
	}
	return nil
}

// fileOrNil keeps a nil *os.File from becoming a non-nil io.Writer.
func fileOrNil(f *os.File) io.Writer {
	if f == nil {
		return nil
	}
	return f
}

// checkSpanFile checks the spans -trace-file wrote and prints PASS or FAIL.
func checkSpanFile(out io.Writer, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("span check: %w", err)
	}
	defer f.Close()
	c, err := checkSpans(f)
	if err != nil {
		fmt.Fprintf(out, "span check (%s): FAIL: %v\n", path, err)
		for _, b := range c.Bad[min(1, len(c.Bad)):] {
			fmt.Fprintf(out, "  also: %s\n", b)
		}
		return fmt.Errorf("span check: %w", err)
	}
	fmt.Fprintf(out, "span check (%s): PASS: %d stage spans of %d messages, each within its message's span\n", path, c.Stages, c.Roots)
	return nil
}

// buildRemote makes this process cluster node "main", starts node "stage2"
// in a second process, and builds the pipeline with stage 2 there. leave
// stops the second process and leaves the cluster.
func buildRemote(ctx context.Context, rt *ra.Runtime, spec ra.PipelineSpec, errOut io.Writer) (*cluster.Pipeline, func(), error) {
	ports, err := nodeproc.FreePorts(2)
	if err != nil {
		return nil, nil, err
	}
	peers := []string{fmt.Sprintf("127.0.0.1:%d", ports[0]), fmt.Sprintf("127.0.0.1:%d", ports[1])}
	jctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	fmt.Fprintln(errOut, "joining cluster as node \"main\" and starting node \"stage2\" in a second process...")
	node, err := cluster.Join(jctx, rt, cluster.NodeConfig{Name: "main", ManagePort: ports[0], Peers: peers})
	if err != nil {
		return nil, nil, err
	}
	proc, err := nodeproc.Start(jctx, nodeproc.Config{Name: "stage2", ManagePort: ports[1], Peers: peers, SimDevices: len(rt.Registry().GPUs())})
	leave := func() { // this node first: a peer that leaves first is blocked by protoactor, racily (see Makefile)
		lctx, lcancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer lcancel()
		node.Leave(lctx)
		if proc != nil {
			proc.Stop(lctx)
		}
	}
	if err == nil {
		err = node.WaitFor(jctx, "stage2")
	}
	if err != nil {
		leave()
		return nil, nil, err
	}
	spec.Stages[1].Node = "stage2"
	cp, err := node.Build(jctx, spec, cluster.Options{})
	if err != nil {
		leave()
		return nil, nil, err
	}
	return cp, leave, nil
}

// send puts the messages into the first stage in batches.
func send(ctx context.Context, p job, o options) error {
	batch := make([]ra.Data, o.batch)
	for i := range batch {
		batch[i].Floats = make([]float32, o.payload)
	}
	for next := 1; next <= o.messages; {
		n := min(o.batch, o.messages-next+1)
		for i := range n {
			id := uint64(next + i)
			batch[i].ID = id
			for j := range batch[i].Floats {
				batch[i].Floats[j] = input(id, j)
			}
		}
		if _, err := p.SendBatch(ctx, batch[:n]); err != nil {
			if errors.Is(err, context.Canceled) {
				return fmt.Errorf("interrupted after %d messages", next-1)
			}
			return err
		}
		next += n
	}
	return nil
}

func progress(p job, total int, w io.Writer, done <-chan struct{}) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	start, last, lastT := time.Now(), uint64(0), time.Now()
	for {
		select {
		case <-done:
			return
		case now := <-t.C:
			st := p.Stats()
			rate := float64(st.Delivered-last) / now.Sub(lastT).Seconds()
			last, lastT = st.Delivered, now
			fmt.Fprintf(w, "[%5.1fs] delivered %d/%d (%.0f%%), dead %d, in flight %d, %.0f msg/s\n",
				now.Sub(start).Seconds(), st.Delivered, total, 100*float64(st.Delivered)/float64(total), st.DeadLettered, st.InFlight, rate)
		}
	}
}

func report(out io.Writer, p job, st ra.PipelineStats, elapsed time.Duration) {
	fmt.Fprintln(out)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "stage\tdevice\tmessages\tsampled\twait p50\twait p90\twait p99\tservice p50\tservice p90\tservice p99\t")
	lat := p.Latency()
	for i, s := range st.Stages {
		var l ra.StageLatency
		if i < len(lat) {
			l = lat[i]
		}
		dev := fmt.Sprint(s.Device)
		if s.Node != "" { // a stage on another cluster node, as it reported
			dev += "@" + s.Node
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%v\t%v\t%v\t%v\t%v\t%v\t\n", s.Stage, dev, s.Processed, l.Samples,
			l.QueueWait.P50, l.QueueWait.P90, l.QueueWait.P99, l.Service.P50, l.Service.P90, l.Service.P99)
	}
	tw.Flush()
	fmt.Fprintf(out, "\nsent %d, delivered %d, dead-lettered %d in %v: %.0f msg/s end to end\n",
		st.Sent, st.Delivered, st.DeadLettered, elapsed.Round(time.Millisecond), float64(st.Delivered)/elapsed.Seconds())
}
