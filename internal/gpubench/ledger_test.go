package gpubench

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ringactor/ringactor/cuda/cudatest"
	rkcuda "github.com/ringactor/ringactor/ringkernel/cuda"
)

// ledgerCase holds one loop variant to its ledger: check gets the window
// of rounds lockstep batches (RunLedger) and fails on any count the
// variant's design does not allow.
type ledgerCase struct {
	variant LedgerVariant
	check   func(t *testing.T, l Ledger, rounds, batch, outCap uint64)
}

// ledgerCases: today's loop, and the budget the flag-in-slot links
// (issue 38 item 1) are designed to: an entry whose variant is Missing
// skips saying so; its check is the design, to hold the variant to once
// it exists (replace Missing with the variant's Spec or Link).
var ledgerCases = []ledgerCase{
	{variant: LedgerVariant{Name: "classic"}, check: checkClassic},
	{variant: LedgerVariants[1], check: checkWarp},
	{variant: LedgerVariants[2], check: checkFlaggedIn},
	{variant: LedgerVariants[3], check: checkFlagged},
}

// eq fails unless got is want; what says what the count is.
func eq(t *testing.T, what string, got, want uint64) {
	t.Helper()
	if got != want {
		t.Errorf("%s: %d, want %d", what, got, want)
	}
}

func atMost(t *testing.T, what string, got, limit uint64) {
	t.Helper()
	if got > limit {
		t.Errorf("%s: %d, want at most %d", what, got, limit)
	}
}

// checkClassic is the classic loop (kernels/cuda/ringactor.cuh, ra_loop)
// as docs/ARCHITECTURE.md §4.1 describes it, over host links, batch by
// batch: each batch of the lockstep window is one publish of tail by the
// host, taken whole (batch <= RA_BATCH) in one step.
func checkClassic(t *testing.T, l Ledger, rounds, batch, outCap uint64) {
	// The loop's own counts: one step per host batch, every message.
	eq(t, "batches (in-link releases stored)", l.Batches, rounds)
	eq(t, "messages processed", l.Messages, rounds*batch)
	// Ingress: one dependent read of tail per batch (pick's ra_avail: the
	// cached tail is used up by the batch before, so each step's poll
	// reads it again, and the read that finds the batch is on its path).
	eq(t, "tail reads on the critical path", l.Work.Tail, rounds)
	// A working round reads no closed flag (only a poll that finds
	// nothing does) and no other word.
	eq(t, "closed-flag reads on the critical path", l.Work.Closed, 0)
	eq(t, "other reads on the critical path", l.Work.Other, 0)
	// Egress room: head is re-read only when the cached head shows the
	// out-link full, once per outCap messages.
	atMost(t, "out-link head reads", l.Work.Head, rounds*batch/outCap+1)
	// The command seq: every 8th round or at a beat, at most once a round
	// (no command is posted in the window, so never the command itself).
	atMost(t, "command reads on the critical path", l.Work.Cmd, rounds)
	// The clock offset: once per heartbeat, nowhere else (give or take
	// one: the window may end or start inside an idle round, whose beat
	// is counted at once and whose loads when the round ends).
	if c := l.Work.Clock + l.Idle.Clock; c+1 < l.Beats || c > l.Beats+1 {
		t.Errorf("clock offset reads (work + idle): %d, want one per heartbeat (%d), give or take one", c, l.Beats)
	}
	eq(t, ".sys loads on the critical path", l.Work.Sys, l.Work.Tail+l.Work.Head+l.Work.Cmd+l.Work.Clock)
	eq(t, ".gpu loads (host links: none)", l.Work.GPU+l.Idle.GPU, 0)
	// Publish (flush): one fence.acq_rel.sys per batch, then two fenced
	// stores: the out-link's tail and the in-link's head.
	eq(t, ".sys fences", l.FenceSys, rounds)
	eq(t, ".gpu fences", l.FenceGPU, 0)
	eq(t, "fenced .sys stores (out tail, in head)", l.FencedSys, 2*rounds)
	// The counters before the fence, relaxed: the in-link's bytes out and
	// releases, the out-link's bytes in and publishes, and the control
	// block's processed, dropped, errors, traced and busy: 9 per batch.
	eq(t, "relaxed .sys stores (counters)", l.RlxSys, 9*rounds)
	// st.release.sys: only the heartbeat in the window (no command, no
	// sampled message, so no state, ack or trace tail).
	eq(t, ".sys release stores", l.RelSys, l.Beats)
	eq(t, ".gpu release stores", l.RelGPU, 0)
	// Block barriers: after top, after stage_in, after process, after
	// headers: 4 per batch.
	eq(t, "block barriers", l.Barriers, 4*rounds)
	// The window starts and ends idle: every batch waited in the backoff.
	if l.Sleeps == 0 {
		t.Errorf("no idle backoff between lockstep batches")
	}
}

// checkFlagged is the flag-in-slot links' design (issue 38 item 1): the
// consumer polls the next slot's flag instead of tail, and the producer
// publishes without a fence, head published lazily for space. Both host
// links flagged: the loop reads its in-link's slots by their flags and
// writes its results as flagged words (kernels/cuda/ra_ll.cuh). As for
// checkFlaggedIn, a round may take a sent batch in two.
func checkFlagged(t *testing.T, l Ledger, rounds, batch, outCap uint64) {
	if l.Batches < rounds || l.Batches > rounds*batch {
		t.Errorf("batches: %d, want %d to %d", l.Batches, rounds, rounds*batch)
	}
	eq(t, "messages processed", l.Messages, rounds*batch)
	// No dependent tail read per batch on ingress: the slot's flag is the
	// data's validity.
	eq(t, "tail reads on the critical path", l.Work.Tail, 0)
	// No .sys fence per batch on egress: a lazily published head may
	// take one now and then (at most one per half the in-link's room).
	atMost(t, ".sys fences", l.FenceSys, rounds/4)
	atMost(t, "fenced .sys stores", l.FencedSys, rounds/4)
	// The out tail is stored relaxed, for observers: with the 9 counters,
	// 10 relaxed stores per batch (the words are not counted: data).
	eq(t, "relaxed .sys stores (counters, out tail)", l.RlxSys, 10*l.Batches)
	// head: a release store, at most one per batch (here the loop finds
	// the ingress empty after every lockstep batch and publishes it then),
	// beside the heartbeats.
	atMost(t, ".sys release stores beyond the heartbeats", l.RelSys, l.Beats+l.Batches)
}

// checkWarp: the warp loop (ringkernel.LoopWarp): no block barrier and no
// sleep while messages flow (its lanes meet at warp barriers, which the
// ledger does not count as block barriers), its batches at most 32.
func checkWarp(t *testing.T, l Ledger, rounds, batch, outCap uint64) {
	eq(t, "messages processed", l.Messages, rounds*batch)
	if l.Batches < rounds {
		t.Errorf("batches: %d, want at least %d", l.Batches, rounds)
	}
	eq(t, "tail reads on the critical path", l.Work.Tail, l.Batches)
	eq(t, ".sys fences (one per published batch)", l.FenceSys, l.Batches)
	eq(t, "block barriers", l.Barriers, 0)
}

// checkFlaggedIn: a flagged in-link, an indexed egress: the ingress half
// of the design, no dependent tail read per batch; the egress still
// fences per batch, and its fence releases the out tail alone (the
// in-link's head is lazy: a release store, not a fenced one).
//
// Without a tail a sent batch is not seen whole: the loop takes what has
// arrived, so a round may take two batches (counted, not fixed). Every
// word of a flagged slot is a .sys load (ld.sys/msg), where the classic
// loop reads its slots with plain loads the ledger does not count: on a
// GPU those loads are independent, not one dependent round trip each.
func checkFlaggedIn(t *testing.T, l Ledger, rounds, batch, outCap uint64) {
	eq(t, "messages processed", l.Messages, rounds*batch)
	if l.Batches < rounds || l.Batches > rounds*batch {
		t.Errorf("batches: %d, want %d to %d", l.Batches, rounds, rounds*batch)
	}
	eq(t, "tail reads on the critical path", l.Work.Tail, 0)
	eq(t, ".sys fences (one per published batch)", l.FenceSys, l.Batches)
	eq(t, "fenced .sys stores (the out tail)", l.FencedSys, l.Batches)
}

// ledgerRig opens the CUDA backend for a ledger test, closed when the test
// ends, and a context of two minutes. It skips without a driver (fails
// under RINGACTOR_REQUIRE_GPU=1) and on a real GPU, whose driver keeps no
// ledger.
func ledgerRig(t *testing.T) (*rkcuda.Backend, context.Context) {
	t.Helper()
	cudatest.Device(t, 0)
	b, err := rkcuda.New(rkcuda.Options{})
	if err != nil {
		t.Fatalf("cuda backend: %v", err)
	}
	t.Cleanup(func() { b.Close() })
	if !LedgerSupported(b) {
		t.Skipf("skipping: %v", ErrNoLedger)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return b, ctx
}

// TestLedger runs each loop variant over the emulated driver and holds it
// to its ledger (it prints the table under -v). It skips without a driver
// (fails under RINGACTOR_REQUIRE_GPU=1) and on a real GPU, whose driver
// keeps no ledger.
func TestLedger(t *testing.T) {
	b, ctx := ledgerRig(t)
	const rounds, batch = 48, 32
	var all []LedgerResult
	for _, c := range ledgerCases {
		t.Run(c.variant.Name, func(t *testing.T) {
			if c.variant.Missing != "" {
				all = append(all, LedgerResult{Variant: c.variant.Name, Missing: c.variant.Missing})
				t.Skip(c.variant.Missing)
			}
			res, err := RunLedger(ctx, b, LedgerOptions{Rounds: rounds, Batch: batch, Variants: []LedgerVariant{c.variant}})
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, res...)
			l := res[0].Ledger
			t.Logf("%+v", l)
			c.check(t, l, rounds, batch, uint64(res[0].OutCapacity))
		})
	}
	var w strings.Builder
	if err := PrintLedger(&w, all); err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", w.String())
	if !strings.HasPrefix(w.String(), "ledger") {
		t.Errorf("the table is not headed ledger:\n%s", w.String())
	}
}

// TestPrintLedger checks the table's shape without a driver: headed
// ledger, one row per variant that ran with its counts per batch and per
// message, and a line for each variant that did not.
func TestPrintLedger(t *testing.T) {
	l := Ledger{Work: Loads{Tail: 10, Sys: 30}, FenceSys: 10, FencedSys: 20, Barriers: 40, Batches: 10, Messages: 320}
	var w strings.Builder
	if err := PrintLedger(&w, []LedgerResult{{Variant: "classic", Ledger: l}, {Variant: "flagged", Missing: "not merged"}}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(w.String(), "\n"), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[0], "ledger") || lines[3] != "  flagged: not run: not merged" {
		t.Fatalf("table:\n%s", w.String())
	}
	head, row := strings.Fields(lines[1]), strings.Fields(lines[2])
	if len(head) != len(row) {
		t.Fatalf("%d columns, %d values:\n%s", len(head), len(row), w.String())
	}
	want := map[string]string{"variant": "classic", "msgs": "320", "batches": "10", "msgs/b": "32.0", "tail/b": "1.00",
		"ld.sys/b": "3.00", "fence.sys/b": "1.00", "fence.sys/msg": "0.031", "fenced.sys/b": "2.00", "bar/b": "4.00", "bar/msg": "0.125"}
	for i, h := range head {
		if v, ok := want[h]; ok && row[i] != v {
			t.Errorf("%s: %s, want %s", h, row[i], v)
		}
	}
	if d := (Ledger{FenceSys: 15, Batches: 12}).Sub(Ledger{FenceSys: 5, Batches: 2}); d.FenceSys != 10 || d.Batches != 10 {
		t.Errorf("Sub: %+v", d)
	}
}

// TestLedgerLazyHead: a flagged in-link's head is published for space only
// (docs/ARCHITECTURE.md §2.4), not per batch. The warp loop takes each
// lockstep round of 128 messages in at least four batches of at most 32,
// from an in-link of 256 slots: a head due every 64 messages, and once
// more when the loop finds the ingress empty, is at most 3 release stores
// a round beside the heartbeats; a head per batch would be at least 4.
func TestLedgerLazyHead(t *testing.T) {
	b, ctx := ledgerRig(t)
	const rounds, batch = 16, 128
	v := LedgerVariant{Name: "flagged-warp", Link: flagged, Spec: LedgerVariants[1].Spec}
	res, err := RunLedger(ctx, b, LedgerOptions{Rounds: rounds, Batch: batch, Variants: []LedgerVariant{v}})
	if err != nil {
		t.Fatal(err)
	}
	l := res[0].Ledger
	t.Logf("%+v", l)
	eq(t, "messages processed", l.Messages, rounds*batch)
	if l.Batches < 4*rounds {
		t.Fatalf("batches: %d, want at least %d (32 a batch at most)", l.Batches, 4*rounds)
	}
	eq(t, ".sys fences", l.FenceSys, 0)
	atMost(t, "head release stores (.sys releases beyond the heartbeats)", l.RelSys-l.Beats, 3*rounds)
}
