package bench

import (
	"context"

	"github.com/ringactor/ringactor/internal/racecheck"
	ra "github.com/ringactor/ringactor/runtime"
)

// suite is every CPU comparison, in the order the table shows them. Each
// runs against its baselines in the same run; messages is per run at full
// size.
func suite() []comparison {
	var pipe, steal simRuntime
	var remote remoteBench
	allReduce := allReduceBench{devices: []int{0, 1, 2, 3}}
	setup := func(s *simRuntime, opts ra.DeviceOptions) func(context.Context) (func(), error) {
		return func(context.Context) (func(), error) {
			r, err := newSimRuntime(opts)
			if err != nil {
				return nil, err
			}
			*s = *r
			return func() { r.rt.Close() }, nil
		}
	}
	return append([]comparison{
		{
			candidate: member{"link/64B-single", "host", linkRun(1)},
			baselines: []member{{"channel/64B-single", "go", chanSingle}},
			messages:  2_000_000,
		},
		{
			candidate: member{"link/64B-batch32", "host", linkRun(linkBatch)},
			baselines: []member{{"channel/64B-batch32", "go", chanBatch}},
			messages:  4_000_000,
		},
		{
			candidate: member{"pipeline/sim-3stage", "sim", pipe.pipeline},
			baselines: []member{
				{"protoactor/3-actors", "go", pipe.protoactor3},
				{"goroutines/3-stage-chan", "go", pipe.goroutines3},
			},
			limits: []member{
				{"limit/3-stage-compute", "go", pipe.compute3},
				{"limit/memcpy-64B", "go", memcpy64},
			},
			messages: 800_000,
			setup:    setup(&pipe, ra.DeviceOptions{SimDevices: 3}),
		},
		{
			candidate: member{"actor/send-to-stage", "sim", pipe.sendToStage},
			baselines: []member{{"protoactor/send", "go", pipe.sendToActor}},
			messages:  800_000,
			setup:     setup(&pipe, ra.DeviceOptions{SimDevices: 1}),
		},
		{
			candidate: member{"group/steal-skewed", "sim", steal.group(true)},
			baselines: []member{{"group/static-skewed", "sim", steal.group(false)}},
			messages:  40_000,
			setup:     setup(&steal, ra.DeviceOptions{SimDevices: stealDevices, SimCost: stealCosts()}),
		},
		allReduceComparison("sim", &allReduce, 400_000, "simulated devices: memory copies between goroutines",
			func(context.Context) (func(), error) {
				r, err := newSimRuntime(ra.DeviceOptions{SimDevices: allReduceDevices, SimP2P: "all"})
				if err != nil {
					return nil, err
				}
				allReduce.rt = r.rt
				return func() { r.rt.Close() }, nil
			}),
		{
			candidate: member{"remote/batched-64B", "loopback", remote.batched},
			baselines: []member{{"protoactor-remote/unbatched-64B", "loopback", remote.unbatched}},
			messages:  200_000,
			setup:     remote.setup,
			skip: func() string {
				if racecheck.Enabled {
					return racecheck.Reason
				}
				return ""
			},
		},
	}, hostComparisons()...)
}
