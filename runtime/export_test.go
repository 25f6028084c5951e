package runtime

import (
	"context"

	"github.com/ringactor/ringactor/ringkernel/sim"
	"github.com/ringactor/ringactor/runtime/internal/devreg"
)

// Freeze models a stall of the whole process (a GC pause, a frozen VM,
// SIGSTOP) for tests: every simulated loop of rt (the GPUs' when they are
// simulated, and the CPU's), every egress pump and every watchdog stop
// at their next step. thaw lets them go in the order that is worst for
// the watchdog: the watchdogs first, each taking one look at heartbeats
// the stall made old, and only then the loops and pumps.
func Freeze(rt *Runtime) (thaw func()) {
	var thawLoops []func()
	for _, b := range []any{rt.gpus, rt.backend.(*devreg.Mux).CPU()} {
		if sb, ok := b.(*sim.Backend); ok {
			thawLoops = append(thawLoops, sb.Freeze())
		}
	}
	openDogs := rt.stall.Close()
	openPumps := rt.pumpStall.Close()
	return func() {
		ps := rt.openPipelines()
		looks := make([]uint64, len(ps))
		for i, p := range ps {
			looks[i] = p.dogLooks.Load()
		}
		openDogs()
		for i, p := range ps {
			for p.started.Load() && p.dogLooks.Load() == looks[i] && p.faulted.Load() == nil {
				select {
				case <-p.dog.Done():
				case <-p.closingCh:
				default:
					waitABit()
					continue
				}
				break
			}
		}
		for _, t := range thawLoops {
			t()
		}
		openPumps()
	}
}

// LoopEnded is closed once the named stage's loop has ended (for a stage
// the watchdog faulted: once its stage function returned and the loop saw
// it was cut off).
func LoopEnded(p *Pipeline, stage string) <-chan struct{} {
	return p.byName[stage].kernel.Ended()
}

func waitABit() {
	ctx, cancel := context.WithTimeout(context.Background(), 100_000)
	defer cancel()
	<-ctx.Done()
}

// StagePIDs is how many stage PIDs rt keeps for late sends (live stages
// and closed ones).
func StagePIDs(rt *Runtime) int { return rt.stages.Len() }

// LiveBuffers is how many buffers rt has allocated and not freed.
func LiveBuffers(rt *Runtime) int { return rt.bufs.Live() }
