package gpubench

import (
	"testing"

	rk "github.com/ringactor/ringactor/ringkernel"
)

// ledgerPrefetch is the pipelined ingress (ringkernel.LoopWarpPrefetch,
// ra_warp.cuh) as a ledger row.
var ledgerPrefetch = LedgerVariant{Name: "warp-prefetch", Spec: func(s *rk.Spec) { s.Variant = rk.LoopWarpPrefetch }}

// TestLedgerPrefetch holds the pipelined ingress to its design over the
// emulated driver, in lockstep batches (RunLedger). Full batches (32): no
// block barrier, one .sys fence per published batch, and at most one tail
// read more per batch than the warp loop: the look-ahead's behind a full
// batch, which in lockstep finds nothing (the host sends the next batch
// only once this one is back) and lands in the work bank when the next
// poll finds the batch. Batches smaller than a look-ahead (8) drain the
// link each step, where the design looks ahead not at all: exactly one
// dependent tail read per batch on the critical path, as the warp loop
// (with the look-ahead made unconditional, about one run in three fails
// here: its poll lands in the work bank only when the next poll finds
// the host's batch at once).
// The ledger counts loads per polling round, so it cannot see the
// look-ahead's loads overlap the publish (they move to the round before);
// a GPU run measures that.
func TestLedgerPrefetch(t *testing.T) {
	b, ctx := ledgerRig(t)
	const rounds = 32
	for _, batch := range []uint64{32, 8} {
		res, err := RunLedger(ctx, b, LedgerOptions{Rounds: rounds, Batch: int(batch), Variants: []LedgerVariant{ledgerPrefetch}})
		if err != nil {
			t.Fatal(err)
		}
		l := res[0].Ledger
		t.Logf("batch %d: %+v", batch, l)
		eq(t, "messages processed", l.Messages, rounds*batch)
		eq(t, "batches (each host batch taken whole)", l.Batches, rounds)
		eq(t, ".sys fences (one per published batch)", l.FenceSys, l.Batches)
		eq(t, "block barriers", l.Barriers, 0)
		if batch == 8 {
			eq(t, "tail reads on the critical path, batches of 8", l.Work.Tail, l.Batches)
		} else if l.Work.Tail < l.Batches || l.Work.Tail > 2*l.Batches {
			t.Errorf("tail reads on the critical path, batches of 32: %d, want %d to %d", l.Work.Tail, l.Batches, 2*l.Batches)
		}
	}
}
