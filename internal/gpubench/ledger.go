package gpubench

// The cost ledger: what CI can see of the GPU data path's speed without a
// GPU. The emulated driver's host build of the device loop counts, per
// ring kernel, the costs that set a GPU's latency (docs/BENCHMARKS.md,
// "ledger"): dependent reads of another agent's memory (each one a PCIe or
// peer round trip on a GPU), .sys fences and release stores, block
// barriers and sleeps. RunLedger runs a ring kernel over the emulated
// driver in lockstep batches and reports them per batch and per message,
// one row per loop variant.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	drv "github.com/ringactor/ringactor/cuda"
	"github.com/ringactor/ringactor/kernels"
	"github.com/ringactor/ringactor/p2pqueue"
	rk "github.com/ringactor/ringactor/ringkernel"
	rkcuda "github.com/ringactor/ringactor/ringkernel/cuda"
)

// The emulated driver's entry points (internal/cudaemu/csrc/cudaemu.cpp);
// a real libcuda has neither.
const (
	symLedger     = "cudaemu_ledger"
	symLedgerMark = "cudaemu_ledger_mark"
)

// ledgerN is the number of counters, RA_HOST_LEDGER_N of
// internal/cudaemu/csrc/ra_host.h; the indices below are its
// RA_HOST_LEDGER_*, in the same order.
const (
	lTail = iota // loads, work bank
	lHead
	lClosed
	lCmd
	lClock
	lOther
	lLdSys
	lLdGPU
	lIdle // the same eight, idle bank
)

const (
	lFenceSys = 2*lIdle + iota
	lFenceGPU
	lRelSys
	lRelGPU
	lFencedSys
	lFencedGPU
	lRlxSys
	lBeats
	lBarriers
	lSleeps
	lSleepNS
	lBatches
	lMessages
	ledgerN
)

// Loads are a ledger's loads of words other agents write, by word, in one
// bank: Work is what rounds that ended in a batch (or the loop's end)
// read, what a message waits for; Idle what rounds that ended in the idle
// backoff read.
type Loads struct {
	Tail   uint64 // an in-link's tail (the ingress poll: ld.acquire)
	Head   uint64 // an out-link's head (room to publish: ld.acquire)
	Closed uint64 // a link's closed flag
	Cmd    uint64 // the command seq, command and argument
	Clock  uint64 // the clock offset (ld.relaxed.sys)
	Other  uint64 // any other word: attach, barrier flags, the stage id
	Sys    uint64 // all of the above at .sys scope: the host or a peer GPU wrote it
	GPU    uint64 // all of the above at .gpu scope
}

// Ledger is one ring kernel's costs, as the host build of the device loop
// counts them (internal/cudaemu/csrc/ra_host.h); a difference of two
// (Sub) is a window's.
type Ledger struct {
	Kernel     string // the entry's name (identity_ring, ...)
	Work, Idle Loads
	FenceSys   uint64 // fence.acq_rel.sys
	FenceGPU   uint64 // fence.acq_rel.gpu
	RelSys     uint64 // st.release.sys (heartbeats, states, the trace tail, closes)
	RelGPU     uint64 // st.release.gpu
	FencedSys  uint64 // st.relaxed.sys after a fence: a fenced release (tails, heads)
	FencedGPU  uint64 // st.relaxed.gpu after a fence
	RlxSys     uint64 // st.relaxed.sys: counters, the last error
	Beats      uint64 // heartbeat stores (also in RelSys)
	Barriers   uint64 // __syncthreads reached by thread 0
	Sleeps     uint64 // __nanosleep calls: the idle backoff
	SleepNS    uint64 // ns they asked for
	Batches    uint64 // batches taken (the in-link's releases the loop stored)
	Messages   uint64 // messages processed (the loop's processed count)
}

func ledgerOf(name string, c [ledgerN]uint64) Ledger {
	bank := func(o int) Loads {
		return Loads{c[o+lTail], c[o+lHead], c[o+lClosed], c[o+lCmd], c[o+lClock], c[o+lOther], c[o+lLdSys], c[o+lLdGPU]}
	}
	return Ledger{Kernel: name, Work: bank(0), Idle: bank(lIdle),
		FenceSys: c[lFenceSys], FenceGPU: c[lFenceGPU], RelSys: c[lRelSys], RelGPU: c[lRelGPU],
		FencedSys: c[lFencedSys], FencedGPU: c[lFencedGPU], RlxSys: c[lRlxSys], Beats: c[lBeats],
		Barriers: c[lBarriers], Sleeps: c[lSleeps], SleepNS: c[lSleepNS], Batches: c[lBatches], Messages: c[lMessages]}
}

func (a Loads) sub(b Loads) Loads {
	return Loads{a.Tail - b.Tail, a.Head - b.Head, a.Closed - b.Closed, a.Cmd - b.Cmd, a.Clock - b.Clock, a.Other - b.Other, a.Sys - b.Sys, a.GPU - b.GPU}
}

// Sub is what l counted since b, an earlier reading of the same kernel.
func (l Ledger) Sub(b Ledger) Ledger {
	return Ledger{Kernel: l.Kernel, Work: l.Work.sub(b.Work), Idle: l.Idle.sub(b.Idle),
		FenceSys: l.FenceSys - b.FenceSys, FenceGPU: l.FenceGPU - b.FenceGPU, RelSys: l.RelSys - b.RelSys, RelGPU: l.RelGPU - b.RelGPU,
		FencedSys: l.FencedSys - b.FencedSys, FencedGPU: l.FencedGPU - b.FencedGPU, RlxSys: l.RlxSys - b.RlxSys, Beats: l.Beats - b.Beats,
		Barriers: l.Barriers - b.Barriers, Sleeps: l.Sleeps - b.Sleeps, SleepNS: l.SleepNS - b.SleepNS,
		Batches: l.Batches - b.Batches, Messages: l.Messages - b.Messages}
}

// ErrNoLedger is returned where the driver keeps no cost ledger: a real
// libcuda (the ledger is the emulated driver's; a GPU is measured by
// bench-gpu's timed rows), or an emulated driver built before the ledger
// (run make emu).
var ErrNoLedger = errors.New("gpubench: the driver keeps no cost ledger (the emulated driver does: RINGACTOR_LIBCUDA=$PWD/.emu/libcudaemu.so after make emu)")

// ledgerDriver is the ledger's entry points in d, or ErrNoLedger.
type ledgerDriver struct{ ledger, mark uintptr }

func ledgerEntries(d *drv.Driver) (ledgerDriver, error) {
	if d == nil {
		return ledgerDriver{}, ErrNoLedger
	}
	e := ledgerDriver{lookup(d.Path(), symLedger), lookup(d.Path(), symLedgerMark)}
	if e.ledger == 0 || e.mark == 0 {
		return ledgerDriver{}, fmt.Errorf("%w: %s", ErrNoLedger, d.Path())
	}
	return e, nil
}

// LedgerSupported reports whether b's driver keeps the cost ledger (the
// emulated driver does, a real libcuda does not).
func LedgerSupported(b *rkcuda.Backend) bool {
	_, err := ledgerEntries(b.Driver())
	return err == nil
}

// find is the ledger of the first launch at or after mark of entry (or
// of its prefixed name: the built-in ops' entries are ra_<op>_ring); a
// zero Ledger if none.
func (e ledgerDriver) find(mark uint64, entry string) (Ledger, error) {
	for i := 0; ; i++ {
		name, n, c, ok := ledgerAt(e.ledger, mark, i)
		if !ok {
			return Ledger{}, nil
		}
		if n != ledgerN {
			return Ledger{}, fmt.Errorf("gpubench: the driver's ledger has %d counters, this build knows %d: rebuild it (make emu)", n, ledgerN)
		}
		if name == entry || strings.HasSuffix(name, "_"+entry) {
			l := ledgerOf(name, c)
			return l, nil
		}
	}
}

// LedgerVariant is one way to run the loop, a row of the ledger: today the
// classic loop; a loop variant (ringkernel.Spec.Variant) or a link format
// is one entry more (LedgerVariants).
type LedgerVariant struct {
	Name string
	// Missing, when set, says why this build cannot run the variant; its
	// row says so instead of counts.
	Missing string
	Spec    func(*rk.Spec)         // adjusts the kernel's spec (a loop variant), or nil
	Link    func(*p2pqueue.Config) // adjusts both links' configuration (a link format), or nil
	InLink  func(*p2pqueue.Config) // adjusts the in-link's alone, after Link, or nil
}

// LedgerVariants are the rows RunLedger runs by default.
var LedgerVariants = []LedgerVariant{
	{Name: "classic"},
	{Name: "warp", Spec: func(s *rk.Spec) { s.Variant = rk.LoopWarp }},
	{Name: "flagged-in", InLink: flagged},
	{Name: "flagged", Link: flagged},
	{Name: "warp+flagged", Spec: func(s *rk.Spec) { s.Variant = rk.LoopWarp }, Link: flagged},
	{Name: "warp-prefetch", Spec: func(s *rk.Spec) { s.Variant = rk.LoopWarpPrefetch }},
}

// flagged makes a link's format p2pqueue.FormatFlagged, its slots twice
// the size (a flagged slot carries half its bytes).
func flagged(c *p2pqueue.Config) { c.Format, c.SlotSize = p2pqueue.FormatFlagged, 2*c.SlotSize }

// LedgerOptions sizes a ledger run.
type LedgerOptions struct {
	Rounds   int             // lockstep batches measured (default 64)
	Batch    int             // messages per batch, at most ringkernel.DeviceBatch (default 32)
	Variants []LedgerVariant // default LedgerVariants
}

// LedgerResult is one variant's window: Rounds batches of Batch messages
// sent in lockstep (one publish of tail per batch, the next batch sent
// once every result of the last is back), and what the kernel counted
// meanwhile.
type LedgerResult struct {
	Variant string
	Missing string // why the variant did not run (Ledger is zero)
	Rounds  int
	Batch   int
	Ledger  Ledger
	// OutCapacity is the out-link's slots: the loop re-reads its head
	// once per OutCapacity messages.
	OutCapacity int
}

// ledgerOutCapacity is the out-link's capacity in RunLedger's rig.
const ledgerOutCapacity = 256

// RunLedger runs each variant's identity ring kernel over the emulated
// driver: host links in mapped pinned memory (the ingress and egress of a
// pipeline), Rounds lockstep batches of Batch 64-byte messages, and
// returns what the kernel counted between the first batch and the last
// (the kernel idle at both ends, so the window holds whole batches).
func RunLedger(ctx context.Context, b *rkcuda.Backend, o LedgerOptions) ([]LedgerResult, error) {
	e, err := ledgerEntries(b.Driver())
	if err != nil {
		return nil, err
	}
	if o.Rounds <= 0 {
		o.Rounds = 64
	}
	if o.Batch <= 0 {
		o.Batch = 32
	}
	if o.Batch > rk.DeviceBatch {
		return nil, fmt.Errorf("gpubench: ledger batch %d is over the loop's %d (a batch would be cut)", o.Batch, rk.DeviceBatch)
	}
	if o.Variants == nil {
		o.Variants = LedgerVariants
	}
	var out []LedgerResult
	for _, v := range o.Variants {
		r := LedgerResult{Variant: v.Name, Missing: v.Missing, Rounds: o.Rounds, Batch: o.Batch, OutCapacity: ledgerOutCapacity}
		if v.Missing == "" {
			if r.Ledger, err = ledgerRun(ctx, b, e, v, o); err != nil {
				return out, fmt.Errorf("ledger, variant %s: %w", v.Name, err)
			}
		}
		out = append(out, r)
	}
	return out, nil
}

func ledgerRun(ctx context.Context, b *rkcuda.Backend, e ledgerDriver, v LedgerVariant, o LedgerOptions) (Ledger, error) {
	r := &rig{b: b}
	defer r.close()
	link := func(capacity uint32, in bool) (*p2pqueue.Link, error) {
		cfg := p2pqueue.ConfigFor(capacity, 64)
		if v.Link != nil {
			v.Link(&cfg)
		}
		if v.InLink != nil && in {
			v.InLink(&cfg)
		}
		n, err := cfg.RegionSize()
		if err != nil {
			return nil, err
		}
		reg, err := b.Alloc(0, n, p2pqueue.MappedPinnedMemory)
		if err != nil {
			return nil, err
		}
		r.regions = append(r.regions, reg)
		return p2pqueue.Init(reg, cfg)
	}
	in, err := link(256, true)
	if err != nil {
		return Ledger{}, err
	}
	egress, err := link(ledgerOutCapacity, false)
	if err != nil {
		return Ledger{}, err
	}
	spec := rk.Spec{Stage: rk.Stage{Name: "ledger", Op: "identity"}, In: []*p2pqueue.Link{in}, Out: []*p2pqueue.Link{egress}}
	if v.Spec != nil {
		v.Spec(&spec)
	}
	mark := ledgerMark(e.mark)
	if err := r.launch(ctx, spec); err != nil {
		return Ledger{}, err
	}
	const entry = "identity_ring"
	read := func() (Ledger, error) {
		l, err := e.find(mark, entry)
		if err == nil && l.Kernel == "" {
			err = fmt.Errorf("the driver has no ledger of the %s launched", entry)
		}
		return l, err
	}
	// idle waits until the kernel has slept once more after what the host
	// has seen: it has finished the step that published it (the step's
	// publish runs before the next idle round), and its last working
	// round is in the work bank. The reading returned is one taken after
	// the one that saw the sleep, so it holds every count made before
	// that sleep (the driver's acquire loads; a reading copies the
	// counters one by one).
	idle := func() (Ledger, error) {
		l0, err := read()
		if err != nil {
			return l0, err
		}
		for {
			l, err := read()
			if err != nil {
				return l, err
			}
			if l.Sleeps > l0.Sleeps {
				return read()
			}
			if err := ctx.Err(); err != nil {
				return l, fmt.Errorf("waiting for the kernel to go idle: %w", err)
			}
			time.Sleep(20 * time.Microsecond)
		}
	}
	send, err := in.Producer()
	if err != nil {
		return Ledger{}, err
	}
	recv, err := egress.Consumer()
	if err != nil {
		return Ledger{}, err
	}
	payload := kernels.EncodeFloats(nil, make([]float32, 16))
	ms := make([]p2pqueue.Message, o.Batch)
	got := make([]p2pqueue.Message, o.Batch)
	id := uint64(0)
	round := func() error {
		for i := range ms {
			ms[i] = p2pqueue.Message{Payload: payload}
			ms[i].ID = id
			id++
		}
		if n, err := send.TryEnqueueBatch(ms); err != nil || n != len(ms) {
			return fmt.Errorf("enqueue of %d: %d sent: %v", len(ms), n, err)
		}
		for k := 0; k < len(ms); {
			n, err := recv.DequeueBatch(ctx, got[:len(ms)-k])
			if err != nil {
				return err
			}
			k += n
		}
		return nil
	}
	if err := round(); err != nil { // warm-up: the kernel's first batch
		return Ledger{}, err
	}
	l0, err := idle()
	if err != nil {
		return Ledger{}, err
	}
	for range o.Rounds {
		if err := round(); err != nil {
			return Ledger{}, err
		}
	}
	l1, err := idle()
	if err != nil {
		return Ledger{}, err
	}
	return l1.Sub(l0), nil
}

// per is n per d, 0 when d is 0.
func per(n, d uint64) float64 {
	if d == 0 {
		return 0
	}
	return float64(n) / float64(d)
}

// PrintLedger writes results as the table headed "ledger"
// (docs/BENCHMARKS.md says what each column counts): one row per
// variant, counts per batch (/b) and per message (/msg).
func PrintLedger(w io.Writer, results []LedgerResult) error {
	fmt.Fprintln(w, "ledger (emulated driver: counts of what costs time on a GPU, not times; identity kernel, host links, lockstep batches)")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "variant\tmsgs\tbatches\tmsgs/b\ttail/b\thead/b\tcmd/b\tclock/b\tld.sys/b\tld.sys/msg\tfence.sys/b\tfence.sys/msg\trel.sys/b\tfenced.sys/b\tbar/b\tbar/msg\tsleeps/b\tidle.ld.sys/b\t")
	var missing []LedgerResult
	for _, r := range results {
		if r.Missing != "" {
			missing = append(missing, r)
			continue
		}
		l, b, m := r.Ledger, r.Ledger.Batches, r.Ledger.Messages
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.1f\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t%.3f\t%.2f\t%.3f\t%.2f\t%.2f\t%.2f\t%.3f\t%.2f\t%.2f\t\n",
			r.Variant, m, b, per(m, b), per(l.Work.Tail, b), per(l.Work.Head, b), per(l.Work.Cmd, b), per(l.Work.Clock, b),
			per(l.Work.Sys, b), per(l.Work.Sys, m), per(l.FenceSys, b), per(l.FenceSys, m), per(l.RelSys, b), per(l.FencedSys, b),
			per(l.Barriers, b), per(l.Barriers, m), per(l.Sleeps, b), per(l.Idle.Sys, b))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, r := range missing {
		if _, err := fmt.Fprintf(w, "  %s: not run: %s\n", r.Variant, r.Missing); err != nil {
			return err
		}
	}
	return nil
}

// WriteLedger runs the default variants (RunLedger) and prints their
// table (PrintLedger); bench-gpu calls it over the emulated driver.
func WriteLedger(ctx context.Context, w io.Writer, b *rkcuda.Backend) error {
	res, err := RunLedger(ctx, b, LedgerOptions{})
	if err != nil {
		return err
	}
	return PrintLedger(w, res)
}
