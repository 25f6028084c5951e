// Command stealing balances uneven work across a stage group: one stage
// on several devices, the work split statically (equal shares: message k
// to device k mod n), then statically with work stealing (the group's
// coordinator has a busy device's kernel forward queued messages to an
// idle one), then by the dynamic policy. It prints each run's throughput
// and per-device counts, the ratio to the static split, and checks every
// result and the group's account.
//
//	go run ./examples/stealing                  # sim, or the GPUs when CUDA runs them
//	go run ./examples/stealing -backend cuda    # the GPUs
//	make emu && RINGACTOR_LIBCUDA=$PWD/.emu/libcudaemu.so RINGACTOR_EMU_DEVICES=4 \
//	    go run ./examples/stealing -backend cuda  # the emulated driver, no GPU
//	go run ./examples/stealing -tasks variable -messages 8000 -cost 2ms
//
// Two workloads (-tasks, default both):
//
//   - uniform: every message costs -cost, but the last device is -slow
//     times slower: its instance gets longer params (group.Spec.DeviceParams).
//   - variable: every device is equally fast, but tasks vary in length:
//     each message carries its own cost (its first float, µs), one task
//     in 100 fifty times longer than the others (seeded, -seed), the mean
//     -cost. The static split is blind to a task's length: a device that
//     drew a long task holds its queue while the host, which deals the
//     messages out in turn, waits on it and the others run dry; stealing
//     hands that queue to the others. It gains less than against a slow
//     device: a device finishes a batch's messages together, and the
//     lanes a long task keeps waiting cannot be stolen.
//
// The stage is the built-in op delay: a message's service time is a sleep
// (params[0] ns per message plus params[1] ns per unit of its first
// float), not arithmetic, so the host's cores are not what limits a
// device, on sim or over the emulated CUDA driver on a small machine. A
// device runs several messages at once, each sleeping on its own: on CUDA
// one per thread (256 threads a block on a GPU, RINGACTOR_EMU_THREADS, 32,
// under the emulated driver), on sim the stage's 8 workers. A device's
// throughput is then its lanes over the sleep, and the slow device's
// sleep is -slow times longer, whatever its lanes. Go's sleeps round up
// to about a millisecond on an idle machine, so -cost is a few ms (default
// 2ms); with -cost much smaller the ratios shrink toward 1 on sim. The
// lanes are kept (the stage is not Stateful, one message at a time): every
// device has as many, so devices differ by their sleeps alone, which is
// what stealing evens out, and a run takes a fraction of the time.
//
// -trace, -metrics (-metrics-addr) and -pprof export spans and metrics
// (the group's imbalance among them) and serve pprof (package
// internal/otelsetup).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/signal"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/ringactor/ringactor/internal/otelsetup"
	ra "github.com/ringactor/ringactor/runtime"
	"github.com/ringactor/ringactor/runtime/group"
)

type options struct {
	backend  string // auto, sim or cuda
	tasks    string // uniform, variable or both
	messages int
	cost     time.Duration
	slow     float64
	devices  int
	seed     uint64
	tel      *otelsetup.Flags // -trace, -metrics, -metrics-addr, -pprof; nil: none
	noSteal  bool             // -steal=false: leave out the stealing run
}

func main() {
	var o options
	flag.StringVar(&o.backend, "backend", "auto", "auto, sim or cuda (auto: the GPUs when the CUDA backend runs them, else simulated devices)")
	flag.StringVar(&o.tasks, "tasks", "both", "uniform (one device -slow times slower), variable (tasks of varying length, devices equal) or both")
	flag.IntVar(&o.messages, "messages", 8000, "messages per run")
	flag.DurationVar(&o.cost, "cost", 2*time.Millisecond, "service time per message on a fast device (variable: the mean)")
	flag.Float64Var(&o.slow, "slow", 4, "uniform: how many times slower the last device is")
	flag.IntVar(&o.devices, "devices", 4, "devices the stage runs on (2 to 4)")
	flag.Uint64Var(&o.seed, "seed", 1, "variable: the seed of the task lengths")
	steal := flag.Bool("steal", true, "run the static split with work stealing too (false: static and dynamic only)")
	o.tel = otelsetup.Register(flag.CommandLine, "stealing")
	flag.Parse()
	o.noSteal = !*steal
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if _, err := run(ctx, o, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "stealing:", err)
		os.Exit(1)
	}
}

// lanes is the stage's workers on sim (messages one device runs at once);
// the CUDA backend runs a message per thread instead.
const lanes = 8

// The variable tasks: one in longEvery is longTask times as long.
const (
	longEvery = 100
	longTask  = 50
)

// result is one run: its time, throughput and the group's account.
type result struct {
	name    string
	elapsed time.Duration
	rate    float64
	stats   group.Stats
}

// workload is one -tasks mode's runs.
type workload struct {
	name string // uniform or variable
	runs []result
}

// ratio is run i's throughput over the static split's.
func (w workload) ratio(i int) float64 { return w.runs[i].rate / w.runs[0].rate }

func run(ctx context.Context, o options, w io.Writer) ([]workload, error) {
	var modes []string
	switch o.tasks {
	case "uniform", "variable":
		modes = []string{o.tasks}
	case "both":
		modes = []string{"uniform", "variable"}
	default:
		return nil, fmt.Errorf("-tasks %q: want uniform, variable or both", o.tasks)
	}
	if o.messages < 1 || o.cost <= 0 || o.slow < 1 || o.devices < 2 || o.devices > 4 {
		return nil, errors.New("want -messages >= 1, -cost > 0, -slow >= 1 and 2 to 4 -devices")
	}
	if o.cost > time.Second {
		return nil, fmt.Errorf("-cost %v: at most 1s a message", o.cost)
	}
	tel, err := o.tel.Start(ctx, w)
	if err != nil {
		return nil, err
	}
	defer tel.Shutdown(context.Background())
	rt, err := ra.New(ra.Config{Devices: ra.DeviceOptions{Backend: o.backend, SimDevices: o.devices},
		TracerProvider: tel.TracerProvider, MeterProvider: tel.MeterProvider})
	if err != nil {
		return nil, err
	}
	defer rt.Close()
	reg := rt.Registry()
	gpus := reg.GPUs()
	if len(gpus) < o.devices {
		return nil, fmt.Errorf("-devices %d: the %s backend has %d GPUs (RINGACTOR_EMU_DEVICES sets the emulated driver's)", o.devices, reg.BackendName(), len(gpus))
	}
	devs := make([]int, o.devices)
	for i := range devs {
		devs[i] = gpus[i].ID
	}
	fmt.Fprintf(w, "%s backend, devices %v; the stage sleeps (op delay), a device runs several messages at once; %d messages per run\n",
		reg.BackendName(), devs, o.messages)
	var out []workload
	for _, m := range modes {
		wl, err := runMode(ctx, rt, tel, o, m, devs, w)
		if err != nil {
			return out, fmt.Errorf("%s tasks: %w", m, err)
		}
		out = append(out, wl)
	}
	return out, nil
}

// runMode runs one workload under each split and prints them.
func runMode(ctx context.Context, rt *ra.Runtime, tel *otelsetup.Setup, o options, mode string, devs []int, w io.Writer) (workload, error) {
	ns := float32(o.cost.Nanoseconds())
	stage := ra.StageSpec{Op: "delay", Workers: lanes, Capacity: 512}
	var params map[int][]float32
	in := make([]float32, o.messages) // each message's first float
	fmt.Fprintln(w)
	switch mode {
	case "uniform":
		slowDev := devs[len(devs)-1]
		stage.Params = []float32{ns, 0}
		params = map[int][]float32{slowDev: {ns * float32(o.slow), 0}}
		for i := range in {
			in[i] = float32(i)
		}
		fmt.Fprintf(w, "uniform tasks: %v a message, device %d %.1fx slower (%v)\n",
			o.cost, slowDev, o.slow, time.Duration(float64(o.cost)*o.slow).Round(time.Microsecond))
	default:
		stage.Params = []float32{0, 1000} // in[0] is the task's length in µs
		lengths(in, o.cost, o.seed)
		var short, long float32 = in[0], in[0]
		nlong := 0
		for _, x := range in {
			short, long = min(short, x), max(long, x)
		}
		for _, x := range in {
			if x == long && long > short {
				nlong++
			}
		}
		fmt.Fprintf(w, "variable tasks: %v a message on average: %d of %d take %v, the others %v (seed %d); every device equally fast\n",
			o.cost, nlong, len(in), us(long), us(short), o.seed)
	}
	runs := []struct {
		name   string
		policy group.Policy
		steal  bool
	}{{"static", group.Static, false}, {"static+stealing", group.Static, true}, {"dynamic", group.Dynamic, false}}
	wl := workload{name: mode}
	for _, c := range runs {
		if c.steal && o.noSteal {
			continue
		}
		stage.Name = mode + "-" + c.name
		r, err := once(ctx, rt, tel, c.name, group.Spec{Name: stage.Name, Devices: devs, Policy: c.policy, Steal: c.steal,
			Stage: stage, DeviceParams: params}, in)
		if err != nil {
			return wl, fmt.Errorf("%s: %w", c.name, err)
		}
		fmt.Fprintf(w, "%-16s %9.0f msg/s  %v\n", c.name, r.rate, r.elapsed.Round(time.Millisecond))
		wl.runs = append(wl.runs, r)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "run\tdevice\tassigned\tprocessed\tstolen from\t")
	for _, r := range wl.runs {
		for _, in := range r.stats.Instances {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t\n", r.name, in.Device, in.Assigned, in.Processed, in.Stolen)
		}
	}
	tw.Flush()
	fmt.Fprintln(w)
	for i, r := range wl.runs[1:] {
		fmt.Fprintf(w, "%s: %s vs static: %.2fx\n", mode, r.name, wl.ratio(i+1))
	}
	return wl, nil
}

// lengths fills in with task lengths in µs, drawn from a generator
// seeded with seed: one task in longEvery is longTask times as long as the
// others, scaled so their mean is cost.
func lengths(in []float32, cost time.Duration, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 36))
	x := make([]float64, len(in))
	sum := 0.0
	for i := range x {
		x[i] = 1
		if rng.IntN(longEvery) == 0 {
			x[i] = longTask
		}
		sum += x[i]
	}
	us := float64(cost) / float64(time.Microsecond) * float64(len(x)) / sum
	for i := range in {
		in[i] = float32(x[i] * us)
	}
}

// us is a task length in µs as a duration.
func us(x float32) time.Duration {
	return (time.Duration(x*1000) * time.Nanosecond).Round(time.Microsecond)
}

// once runs one group to completion, checks every result (the delay op
// hands its message on unchanged) and the group's account.
func once(ctx context.Context, rt *ra.Runtime, tel *otelsetup.Setup, name string, spec group.Spec, in []float32) (result, error) {
	n := len(in)
	done := make(chan struct{})
	var got, wrong atomic.Int64 // results arrive on every instance's pump
	spec.Deliver = ra.Sink{Func: func(r ra.Result) {
		if r.ID < 1 || r.ID > uint64(n) || len(r.Floats) != 1 || r.Floats[0] != in[r.ID-1] {
			wrong.Add(1)
		}
		if got.Add(1) == int64(n) {
			close(done)
		}
	}}
	var dead atomic.Int64
	spec.OnDeadLetter = func(ra.DeadLetter) { dead.Add(1) }
	g, err := group.New(ctx, rt, spec)
	if err != nil {
		return result{}, err
	}
	ds := make([]ra.Data, n)
	for i := range ds {
		ds[i] = ra.Data{ID: uint64(i + 1), Floats: []float32{in[i]}}
	}
	start := time.Now()
	if _, err := g.SendBatch(ctx, ds); err != nil {
		g.Close(context.Background(), false)
		return result{}, err
	}
	select {
	case <-done:
	case <-ctx.Done():
		g.Close(context.Background(), false)
		return result{}, ctx.Err()
	}
	el := time.Since(start)
	tel.Flush(ctx) // -metrics: the group's before it closes
	if err := g.Close(ctx, true); err != nil {
		return result{}, err
	}
	st := g.Stats()
	var processed, assigned uint64
	for _, in := range st.Instances {
		processed += in.Processed
		assigned += in.Assigned
	}
	switch {
	case st.Sent != uint64(n) || st.Delivered != uint64(n) || st.DeadLettered != 0 || st.InFlight != 0 || dead.Load() != 0:
		return result{}, fmt.Errorf("account does not balance: %+v", st)
	case processed != uint64(n) || assigned != uint64(n):
		return result{}, fmt.Errorf("instances processed %d and were assigned %d of %d messages: %+v", processed, assigned, n, st.Instances)
	case wrong.Load() != 0:
		return result{}, fmt.Errorf("%d of %d results are not their message", wrong.Load(), n)
	}
	return result{name: name, elapsed: el, rate: float64(n) / el.Seconds(), stats: st}, nil
}
