package gpubench

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/ringactor/ringactor/kernels"
	"github.com/ringactor/ringactor/p2pqueue"
	rk "github.com/ringactor/ringactor/ringkernel"
)

// variant is a way of running the device loop, selected at launch: its
// name (the variant column), the loop (ringkernel.Spec.Variant) and the
// format of every link its measurements make (the round trip's in and
// out, the hop's three, the pipeline's four). Adding a variant is one
// line in variants.
type variant struct {
	name   string
	loop   rk.LoopVariant
	format p2pqueue.Format
}

// set applies v's loop to a kernel's spec.
func (v variant) set(s *rk.Spec) { s.Variant = v.loop }

// variants are compared in every run, in this order; the first is
// today's loop, the default, whose round trip, hop and pipeline are also
// the gpu/ rows. A variant whose launch the backend refuses
// (ringkernel.ErrUnsupported: a backend that cannot run a loop or a
// link format) is left out with the backend's reason (Report.LeftOut) and
// the others go on; the default must run.
var variants = []variant{
	{"loop", rk.LoopClassic, p2pqueue.FormatIndexed},
	{"warp", rk.LoopWarp, p2pqueue.FormatIndexed},                          // experimental (ra_warp.cuh)
	{"flagged", rk.LoopClassic, p2pqueue.FormatFlagged},                    // experimental: flagged links (p2pqueue/flagged.go, ra_ll.cuh)
	{"warp+flagged", rk.LoopWarp, p2pqueue.FormatFlagged},                  // experimental
	{"warp-prefetch", rk.LoopWarpPrefetch, p2pqueue.FormatIndexed},         // experimental: the pipelined ingress (ra_warp.cuh)
	{"warp-prefetch+flagged", rk.LoopWarpPrefetch, p2pqueue.FormatFlagged}, // experimental
}

// VariantNames are the variants every run measures, in order (the
// variant column; the first is the default).
func VariantNames() []string {
	names := make([]string, len(variants))
	for i, v := range variants {
		names[i] = v.name
	}
	return names
}

// refused says whether err is the backend refusing a non-default
// variant's launch (what it cannot run yet), as opposed to a failure of
// the run.
func refused(err error) bool { return errors.Is(err, rk.ErrUnsupported) }

// The phase timers' words (RA_PHASE_* of ringactor.cuh): ns per phase,
// then batches and messages; the loop writes phaseWords u64 words.
const (
	phasePoll = iota
	phaseStageIn
	phaseCompute
	phasePublish
	phaseBatches
	phaseMessages
	phaseWords = 8
)

// echo is one variant's identity ring kernel for round trips: its
// links, its phase timers, and the samples so far.
type echo struct {
	v     variant
	send  *p2pqueue.Producer
	recv  *p2pqueue.Consumer
	phase p2pqueue.Region
	k     *rk.Kernel
	lat   []time.Duration
	next  uint64
	// The default variant's sampled messages: their trace records split
	// the trip (send to stage, stage, stage to host).
	mu   sync.Mutex
	recs map[uint64]rk.TraceRecord
	sent map[uint64][2]time.Time
}

// launchEcho starts v's echo kernel on the rig, its links of v's format,
// its phase timers in device memory, zeroed.
func launchEcho(ctx context.Context, r *rig, v variant, traced bool) (*echo, error) {
	in, err := r.link(p2pqueue.MappedPinnedMemory, v.format, 64, 16)
	if err != nil {
		return nil, err
	}
	out, err := r.link(p2pqueue.MappedPinnedMemory, v.format, 64, 16)
	if err != nil {
		return nil, err
	}
	e := &echo{v: v, recs: map[uint64]rk.TraceRecord{}, sent: map[uint64][2]time.Time{}}
	if e.phase, err = r.b.Alloc(0, 8*phaseWords, p2pqueue.DeviceMemory); err != nil {
		return nil, err
	}
	r.regions = append(r.regions, e.phase)
	if err := e.phase.Access.CopyIn(0, make([]byte, 8*phaseWords)); err != nil {
		return nil, err
	}
	spec := rk.Spec{Stage: rk.Stage{Name: "echo-" + v.name, Op: "identity"}, In: []*p2pqueue.Link{in}, Out: []*p2pqueue.Link{out},
		TraceCapacity: 4096, PhaseTimers: e.phase.DeviceAddr}
	if traced {
		spec.OnTrace = func(t rk.TraceRecord) { e.mu.Lock(); e.recs[t.ID] = t; e.mu.Unlock() }
	}
	v.set(&spec)
	if err := r.launch(ctx, spec); err != nil {
		return nil, err
	}
	e.k = r.kernels[len(r.kernels)-1]
	e.send, _ = in.Producer()
	e.recv, _ = out.Consumer()
	return e, nil
}

// trips sends k messages one at a time and spins for each one's return;
// keep says whether they are samples (else a warm-up), sample whether
// every 16th is traced.
func (e *echo) trips(ctx context.Context, k int, keep, sample bool) error {
	msg := p2pqueue.Message{Payload: kernels.EncodeFloats(nil, make([]float32, 16))}
	var got p2pqueue.Message
	for range k {
		msg.ID = e.next
		e.next++
		msg.Flags, msg.Enqueued = 0, 0
		sampled := keep && sample && msg.ID%16 == 0 && len(e.sent) < 4000
		if sampled {
			msg.Flags = p2pqueue.FlagSampled
		}
		t0 := time.Now()
		if err := e.send.TryEnqueue(&msg); err != nil {
			return err
		}
		for {
			err := e.recv.TryDequeue(&got)
			if err == nil {
				break
			}
			if !errors.Is(err, p2pqueue.ErrEmpty) {
				return err
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
		}
		t1 := time.Now()
		if keep {
			e.lat = append(e.lat, t1.Sub(t0))
		}
		if sampled {
			e.sent[msg.ID] = [2]time.Time{t0, t1}
		}
	}
	return nil
}

// parts pairs the sampled trips with their trace records, waiting a
// little for the trace pump.
func (e *echo) parts() [3][]time.Duration {
	var parts [3][]time.Duration
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		e.mu.Lock()
		k := len(e.recs)
		e.mu.Unlock()
		if k >= len(e.sent) {
			break
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for id, tp := range e.sent {
		rec, ok := e.recs[id]
		if !ok {
			continue
		}
		parts[0] = append(parts[0], rec.Dequeued.Sub(tp[0]))
		parts[1] = append(parts[1], rec.Done.Sub(rec.Dequeued))
		parts[2] = append(parts[2], tp[1].Sub(rec.Done))
	}
	for i := range parts {
		slices.Sort(parts[i])
	}
	return parts
}

// phases terminates the kernel (the loop stores its timers as it ends)
// and reads them.
func (e *echo) phases(ctx context.Context, row string) (Phase, error) {
	if err := e.k.Terminate(ctx, false); err != nil {
		return Phase{}, err
	}
	p, err := readPhase(e.phase, row, e.v.name)
	p.Stage = "echo-" + e.v.name
	return p, err
}

// readPhase reads the phase timers an ended kernel stored in reg.
func readPhase(reg p2pqueue.Region, row, variant string) (Phase, error) {
	b := make([]byte, 8*phaseWords)
	if err := reg.Access.CopyOut(b, 0); err != nil {
		return Phase{}, err
	}
	w := func(i int) uint64 { return binary.LittleEndian.Uint64(b[8*i:]) }
	p := Phase{Row: row, Variant: variant, Batches: w(phaseBatches), Messages: w(phaseMessages)}
	if p.Batches > 0 {
		mean := func(i int) float64 { return float64(w(i)) / float64(p.Batches) }
		p.Poll, p.StageIn, p.Compute, p.Publish = mean(phasePoll), mean(phaseStageIn), mean(phaseCompute), mean(phasePublish)
	}
	return p, nil
}

// interleaved measures the round trip of every variant in vs and the
// mapped ping-pong floor (when f is not nil) in alternating blocks:
// floor, then each variant, blocks times, so drift on the machine falls
// on all alike. A variant whose launch the backend refuses, or whose
// block runs past limit, is left out (leave) and the others go on; the
// default's refusal ends the run (attempt). It returns the echo of each
// variant that ran every block (samples sorted, its kernel still
// running: phases reads its timers) and the floor's samples.
func interleaved(ctx context.Context, r *rig, f *floors, n int, vs []variant, limit time.Duration, leave func(variant, string, error)) ([]*echo, []time.Duration, error) {
	const blocks = 8
	k := max(n/blocks, 1)
	es := make([]*echo, 0, len(vs))
	if _, err := inTurn(ctx, vs, 1, "round trip", limit, leave, func(_ context.Context, v variant, _ int) error {
		e, err := launchEcho(ctx, r, v, v == variants[0])
		if err == nil {
			es = append(es, e)
		}
		return err
	}); err != nil {
		return nil, nil, err
	}
	// trips runs each echo's share of a block in turn; one left out
	// leaves es (its kernel ends with the rig).
	trips := func(k int, keep bool) error {
		for i := 0; i < len(es); {
			e := es[i]
			why, err := attempt(ctx, e.v, limit, func(ctx context.Context) error { return e.trips(ctx, k, keep, keep) })
			if err != nil {
				return fmt.Errorf("variant %s: %w", e.v.name, err)
			}
			if why != nil {
				leave(e.v, "round trip", why)
				es = slices.Delete(es, i, i+1)
				continue
			}
			i++
		}
		return nil
	}
	// Warm up: each kernel, and the floor, a tenth of the run.
	if err := trips(max(n/10, 1), false); err != nil {
		return nil, nil, err
	}
	var floor []time.Duration
	const skip = 8 // each floor block's first rounds wait for its launch
	if f != nil {
		if err := f.mapped(ctx, skip, nil); err != nil {
			return nil, nil, err
		}
	}
	for b := range blocks {
		if f != nil {
			var lat []time.Duration
			if err := f.mapped(ctx, k+skip, &lat); err != nil {
				return nil, nil, fmt.Errorf("floor block %d: %w", b, err)
			}
			floor = append(floor, lat[skip:]...)
		}
		if err := trips(k, true); err != nil {
			return nil, nil, fmt.Errorf("block %d: %w", b, err)
		}
	}
	for _, e := range es {
		slices.Sort(e.lat)
	}
	slices.Sort(floor)
	return es, floor, nil
}

// inTurn runs measure for each variant of vs in turn, blocks times (the
// hop's and the pipeline's interleaving, each block a fresh launch of
// the variant's kernels), so drift falls on all alike. A variant the
// backend refuses, or whose block runs past limit, is left out (leave,
// with what it measures) and dropped from the blocks after (attempt);
// the default's refusal, or any other error, ends the run. It returns
// the variants that ran every block.
func inTurn(ctx context.Context, vs []variant, blocks int, what string, limit time.Duration, leave func(variant, string, error), measure func(ctx context.Context, v variant, block int) error) ([]variant, error) {
	live := slices.Clone(vs)
	for b := range blocks {
		for i := 0; i < len(live); {
			v := live[i]
			why, err := attempt(ctx, v, limit, func(ctx context.Context) error { return measure(ctx, v, b) })
			switch {
			case err != nil:
				return nil, fmt.Errorf("%s, variant %s, block %d: %w", what, v.name, b, err)
			case why != nil:
				leave(v, what, why)
				live = slices.Delete(live, i, i+1)
			default:
				i++
			}
		}
	}
	return live, nil
}

// attempt runs f, variant v's share of a block: the default variant under
// ctx alone, another under limit as well (0: no limit), so an
// experimental variant that hangs costs limit, not the run. It returns
// why v is to be left out (the backend refused its launch,
// ringkernel.ErrUnsupported, or it ran past limit), or the run's error
// (any other, and every error of the default).
func attempt(ctx context.Context, v variant, limit time.Duration, f func(context.Context) error) (why, err error) {
	if v == variants[0] {
		return nil, f(ctx)
	}
	late := false
	if limit > 0 {
		bctx, cancel := context.WithTimeout(ctx, limit)
		err = f(bctx)
		late = errors.Is(bctx.Err(), context.DeadlineExceeded)
		cancel()
	} else {
		err = f(ctx)
	}
	switch {
	case err == nil:
		return nil, nil
	case refused(err):
		return err, nil
	case late && ctx.Err() == nil:
		return fmt.Errorf("did not finish in %v (the variant limit): %w", limit, err), nil
	}
	return nil, err
}

// mergePhases sums the phases of the same kernel (row, stage and
// variant) over the blocks that launched it, in the order first seen:
// batches and messages add, each phase's mean is over all the batches.
func mergePhases(ps []Phase) []Phase {
	type key struct{ row, stage, variant string }
	var out []Phase
	at := map[key]int{}
	for _, p := range ps {
		k := key{p.Row, p.Stage, p.Variant}
		i, ok := at[k]
		if !ok {
			at[k] = len(out)
			out = append(out, p)
			continue
		}
		q := &out[i]
		if b := q.Batches + p.Batches; b > 0 {
			mean := func(x, y float64) float64 {
				return (x*float64(q.Batches) + y*float64(p.Batches)) / float64(b)
			}
			q.Poll, q.StageIn, q.Compute, q.Publish = mean(q.Poll, p.Poll), mean(q.StageIn, p.StageIn), mean(q.Compute, p.Compute), mean(q.Publish, p.Publish)
		}
		q.Batches += p.Batches
		q.Messages += p.Messages
	}
	return out
}
