package bench

import (
	"context"
	"fmt"
	"time"

	ra "github.com/ringactor/ringactor/runtime"
	"github.com/ringactor/ringactor/runtime/collective"
)

// The all-reduce rows: collective.AllReduce of a sum over the devices'
// participants, DeviceLinks (the reduce-scatter passed from kernel to
// kernel over device links) against HostHops (every ring step through the
// host) in the same rounds. A row's messages are the floats of each
// participant's vector, so msgs/s is floats all-reduced per second; each
// run is one call, building and closing its pipelines, and its latency
// the call's.

// allReduceDevices is how many participants the sim rows have, one per
// simulated device.
const allReduceDevices = 4

// allReduceNote says what the rows count; the backend's note follows.
const allReduceNote = "msgs = floats of each participant's vector, one AllReduce call a run"

type allReduceBench struct {
	rt      *ra.Runtime
	devices []int // one participant on each
	round   int
}

func (a *allReduceBench) run(path collective.Path) runner {
	return func(ctx context.Context, n int, lat *latencies) (time.Duration, error) {
		a.round++
		vs := make([][]float32, len(a.devices))
		for i := range vs {
			vs[i] = make([]float32, n)
			for k := range vs[i] {
				vs[i][k] = float32((7*i + k) % 13)
			}
		}
		spec := collective.Spec{Name: fmt.Sprintf("allreduce-%d", a.round), Devices: a.devices, Path: path}
		start := time.Now()
		for id := uint64(1); id <= uint64(n); id++ {
			lat.send(id)
		}
		got, err := collective.AllReduce(ctx, a.rt, spec, vs, collective.ReduceSum)
		el := time.Since(start)
		if err != nil {
			return 0, err
		}
		for id := uint64(1); id <= uint64(n); id++ {
			lat.arrive(id) // every float's result arrives with the call's return
		}
		for _, k := range []int{0, n / 2, n - 1} {
			var want float32
			for i := range vs {
				want += vs[i][k]
			}
			if got[len(got)-1][k] != want {
				return 0, fmt.Errorf("%v: element %d is %g, want %g", path, k, got[len(got)-1][k], want)
			}
		}
		return el, nil
	}
}

// allReduceComparison is the all-reduce rows on rt's devices: tag names
// the backend ("sim", "cuda"), devices the participants.
func allReduceComparison(tag string, a *allReduceBench, messages int, note string, setup func(context.Context) (func(), error)) comparison {
	if note != "" {
		note = allReduceNote + "; " + note
	} else {
		note = allReduceNote
	}
	return comparison{
		candidate: member{"allreduce/" + tag + "-device-links", tag, a.run(collective.DeviceLinks)},
		baselines: []member{{"allreduce/" + tag + "-host-hops", tag, a.run(collective.HostHops)}},
		messages:  messages,
		note:      note,
		setup:     setup,
	}
}

// cudaAllReduce is the all-reduce rows on the CUDA backend's devices: one
// participant per GPU, up to four, or two on one GPU.
func cudaAllReduce(rt *ra.Runtime, note string) comparison {
	var devs []int
	for _, g := range rt.Registry().GPUs() {
		if len(devs) < allReduceDevices {
			devs = append(devs, g.ID)
		}
	}
	if len(devs) == 1 {
		devs = append(devs, devs[0])
	}
	a := &allReduceBench{rt: rt, devices: devs}
	// A warm-up call of each path first: the devices' first pipelines
	// (arenas, modules) cost seconds on the emulated driver.
	warm := func(ctx context.Context) (func(), error) {
		for _, p := range []collective.Path{collective.DeviceLinks, collective.HostHops} {
			if _, err := a.run(p)(ctx, 2*len(devs), newLatencies(0)); err != nil {
				return nil, fmt.Errorf("warm-up: %w", err)
			}
		}
		return func() {}, nil
	}
	return allReduceComparison("cuda", a, 200_000, note, warm)
}
