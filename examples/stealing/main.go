// Command stealing balances a skewed workload across a stage group: four
// simulated devices, one of them -slow times slower, run the same stage;
// the work is split statically (equal shares), then statically with work
// stealing, then by the dynamic policy. It prints per-device counts and
// throughput for each, and the ratio to the static split. -trace, -metrics
// (-metrics-addr) and -pprof export spans and metrics (the group's
// imbalance among them) and serve pprof (package internal/otelsetup).
//
//	go run ./examples/stealing -messages 20000 -cost 20us -slow 4
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
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
	messages int
	cost     time.Duration
	slow     float64
	devices  int
	tel      *otelsetup.Flags // -trace, -metrics, -metrics-addr, -pprof; nil: none
}

func main() {
	var o options
	flag.IntVar(&o.messages, "messages", 20000, "messages per run")
	flag.DurationVar(&o.cost, "cost", 20*time.Microsecond, "simulated service time per message on a fast device")
	flag.Float64Var(&o.slow, "slow", 4, "how many times slower the last device is")
	flag.IntVar(&o.devices, "devices", 4, "simulated devices (2 to 4)")
	o.tel = otelsetup.Register(flag.CommandLine, "stealing")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, o, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "stealing:", err)
		os.Exit(1)
	}
}

// result is one run: throughput and the group's account.
type result struct {
	name  string
	rate  float64
	stats group.Stats
}

func run(ctx context.Context, o options, w io.Writer) error {
	if o.messages < 1 || o.cost <= 0 || o.slow < 1 || o.devices < 2 || o.devices > 4 {
		return errors.New("want -messages >= 1, -cost > 0, -slow >= 1 and 2 to 4 -devices")
	}
	tel, err := o.tel.Start(ctx, w)
	if err != nil {
		return err
	}
	defer tel.Shutdown(context.Background())
	cost := map[int]time.Duration{}
	devs := make([]int, o.devices)
	for i := range devs {
		devs[i] = i
		cost[i] = o.cost
	}
	cost[o.devices-1] = time.Duration(float64(o.cost) * o.slow)
	fmt.Fprintf(w, "%d simulated devices, %v per message, device %d %.1fx slower; %d messages per run\n\n",
		o.devices, o.cost, o.devices-1, o.slow, o.messages)
	var results []result
	for _, c := range []struct {
		name   string
		policy group.Policy
		steal  bool
	}{{"static", group.Static, false}, {"static+stealing", group.Static, true}, {"dynamic", group.Dynamic, false}} {
		r, err := once(ctx, tel, c.name, c.policy, c.steal, devs, cost, o.messages)
		if err != nil {
			return fmt.Errorf("%s: %w", c.name, err)
		}
		fmt.Fprintf(w, "%-16s %9.0f msg/s\n", c.name, r.rate)
		results = append(results, r)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "run\tdevice\tassigned\tprocessed\tstolen from\t")
	for _, r := range results {
		for _, in := range r.stats.Instances {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t\n", r.name, in.Device, in.Assigned, in.Processed, in.Stolen)
		}
	}
	tw.Flush()
	fmt.Fprintln(w)
	for _, r := range results[1:] {
		fmt.Fprintf(w, "%s vs static: %.2fx\n", r.name, r.rate/results[0].rate)
	}
	return nil
}

// once runs one group to completion and checks its account.
func once(ctx context.Context, tel *otelsetup.Setup, name string, p group.Policy, steal bool, devs []int, cost map[int]time.Duration, n int) (result, error) {
	rt, err := ra.New(ra.Config{Devices: ra.DeviceOptions{Backend: "sim", SimDevices: len(devs), SimCost: cost},
		TracerProvider: tel.TracerProvider, MeterProvider: tel.MeterProvider})
	if err != nil {
		return result{}, err
	}
	defer rt.Close()
	done := make(chan struct{})
	var got atomic.Int64 // results arrive on every instance's pump
	g, err := group.New(ctx, rt, group.Spec{
		Name: "work", Devices: devs, Policy: p, Steal: steal,
		Stage: ra.StageSpec{Name: "work", Op: "scale", Params: []float32{2}, Capacity: 512},
		Deliver: ra.Sink{Func: func(ra.Result) {
			if got.Add(1) == int64(n) {
				close(done)
			}
		}},
	})
	if err != nil {
		return result{}, err
	}
	ds := make([]ra.Data, n)
	for i := range ds {
		ds[i].Floats = []float32{float32(i)}
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
	if st.Delivered != uint64(n) || st.DeadLettered != 0 {
		return result{}, fmt.Errorf("account does not balance: %+v", st)
	}
	return result{name: name, rate: float64(n) / el.Seconds(), stats: st}, nil
}
