package collective

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ringactor/ringactor/internal/ctxcheck"
	"github.com/ringactor/ringactor/kernels"
	"github.com/ringactor/ringactor/p2pqueue"
	ra "github.com/ringactor/ringactor/runtime"
	"github.com/ringactor/ringactor/runtime/internal/naming"
)

// Collectives: ScatterGather, Reduce and AllReduce, built from
// pipelines (the ordinary runtime.Pipeline API, so they run on any backend the
// pipelines run on) whose ring kernels do all the arithmetic. Go cuts the
// input into messages, routes them, and puts the results back in place by
// message id; it never computes on the data. Each call builds its
// pipelines, named "<Name>-<role><participant>", and closes them before it
// returns. Every message ends as a result or as a dead letter; a dead
// letter fails the call with a *ChunkError naming the chunk and the reason.

// Spec says where a collective runs.
type Spec struct {
	// Name prefixes the names of the collective's pipelines; no spaces or
	// slashes. Empty picks "collective<n>". Two collectives running at
	// once in one Runtime need different names.
	Name string
	// Devices are the participants' device ids, in ring order. A device may
	// appear more than once (two participants on one device).
	Devices []int
	// Op and Params are ScatterGather's elementwise op (any registered op
	// whose result has its input's length) and its parameters. Reduce and
	// AllReduce take a ReduceOp instead and refuse a spec that sets these.
	Op     string
	Params []float32
	// Chunk is the most input floats one message carries (default 64).
	// AllReduce's HostHops messages carry two operands, so up to 2*Chunk
	// floats.
	Chunk int
	// Path is how AllReduce moves its data: AutoPath (the zero value),
	// DeviceLinks or HostHops. The other collectives ignore it.
	Path Path
}

// DefaultChunk is the floats per message when Spec.Chunk is 0.
const DefaultChunk = 64

//go:generate go run golang.org/x/tools/cmd/stringer@v0.52.0 -type=ReduceOp -linecomment

// ReduceOp is the reduction of Reduce and AllReduce.
type ReduceOp int

const (
	ReduceSum ReduceOp = iota // sum
	ReduceMin                 // min
	ReduceMax                 // max
)

func (o ReduceOp) valid() bool { return o >= ReduceSum && o <= ReduceMax }

// reduceKernel reduces a message to one float; pairKernel combines the two
// halves of a message elementwise (see package kernels).
func (o ReduceOp) reduceKernel() string { return "reduce_" + o.String() }
func (o ReduceOp) pairKernel() string   { return "pair_" + o.String() }

var (
	// ErrBadSpec: a collective's spec or input that it cannot run.
	ErrBadSpec = errors.New("ringactor: bad collective")
	// ErrChunkLost: a collective's message ended as a dead letter; the
	// error is a *ChunkError.
	ErrChunkLost = errors.New("ringactor: collective chunk lost")
)

// ChunkError is a collective's message that ended as a dead letter: which
// part of its step's input it carried, and the dead letter saying why. It
// matches ErrChunkLost.
type ChunkError struct {
	Collective string
	// Step is the collective's step: "scatter", "reduce round 1" (the
	// input), "reduce round 2" (round 1's partials), ...,
	// "reduce-scatter step 0", "all-gather step 0", ...
	Step string
	// Chunk is the message's chunk in its step, and Offset and Len the
	// floats of the step's input (the data, the partials, or AllReduce's
	// vector) that it carried.
	Chunk, Offset, Len int
	// Participant is the AllReduce participant the message was sent to
	// (over DeviceLinks, the one whose kernel dropped it; its kernel's
	// device is Dead.Device); -1 for the other collectives.
	Participant int
	Dead        ra.DeadLetter
	// More counts the other messages of the step that were lost.
	More int
}

func (e *ChunkError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "ringactor: collective %q: %s chunk %d (floats %d..%d", e.Collective, e.Step, e.Chunk, e.Offset, e.Offset+e.Len-1)
	if e.Participant >= 0 {
		fmt.Fprintf(&b, ", for participant %d", e.Participant)
	}
	fmt.Fprintf(&b, ") lost on device %d: %v", e.Dead.Device, e.Dead)
	if e.More > 0 {
		fmt.Fprintf(&b, "; and %d more message(s) of the step", e.More)
	}
	return b.String()
}

// Is reports ErrChunkLost.
func (e *ChunkError) Is(target error) bool { return target == ErrChunkLost }

// Unwrap is the dead letter's error.
func (e *ChunkError) Unwrap() error { return e.Dead.Err }

// ScatterGather applies spec.Op elementwise to data across spec.Devices:
// data is cut into chunks of spec.Chunk floats, chunk k goes as one
// message to the ring kernel of participant k mod len(Devices) (one
// one-stage pipeline each), and the results are gathered back into place
// by message id. The result has data's length; data is not modified.
func ScatterGather(ctx context.Context, rt *ra.Runtime, spec Spec, data []float32) (_ []float32, err error) {
	if err := ctxcheck.Live(ctx, "collective.ScatterGather"); err != nil {
		return nil, err
	}
	if err := checkSpec(rt, &spec, "ScatterGather"); err != nil {
		return nil, err
	}
	if spec.Op == "" {
		return nil, spec.bad("ScatterGather needs an Op: one of %v", kernels.Names())
	}
	op, err := kernels.Lookup(spec.Op)
	if err != nil {
		return nil, spec.bad("%v", err)
	}
	if len(spec.Params) != op.Params {
		return nil, spec.bad("op %s takes %d params, got %d", op.Name, op.Params, len(spec.Params))
	}
	if len(data) == 0 {
		return nil, spec.bad("no data to scatter")
	}
	c := newCollective(rt, spec)
	defer c.close(ctx, &err)
	pipes := make([]*ra.Pipeline, len(spec.Devices))
	for i, d := range spec.Devices {
		if pipes[i], err = c.pipeline(ctx, fmt.Sprintf("sg%d", i), d, spec.Op, spec.Params, spec.Chunk); err != nil {
			return nil, err
		}
	}
	pieces := cut(len(data), spec.Chunk, func(k, off, n int) piece {
		return piece{pipe: pipes[k%len(pipes)], floats: data[off : off+n], participant: -1}
	})
	res, err := c.round(ctx, "scatter", pieces)
	if err != nil {
		return nil, err
	}
	out := make([]float32, len(data))
	for k, p := range pieces {
		if len(res[k]) != p.n {
			return nil, spec.bad("op %s gave %d floats for chunk %d of %d floats; ScatterGather needs an elementwise op", op.Name, len(res[k]), k, p.n)
		}
		copy(out[p.off:], res[k])
	}
	return out, nil
}

// Reduce reduces data to one float by op across spec.Devices: data is cut
// into chunks of spec.Chunk floats sent round-robin to each participant's
// ring kernel running "reduce_<op>" (one float per message, the chunk's
// reduction); then the partials are reduced again, spec.Chunk (at least 2)
// per message, by the kernel of the first participant, round after round,
// until one float is left. Sums of floats depend on that order: within
// float32 rounding of the exact sum (about rounds*Chunk*2⁻²⁴ times the sum
// of magnitudes at worst), exact where every partial sum is an integer
// below 2²⁴ in magnitude. Empty data is an error.
func Reduce(ctx context.Context, rt *ra.Runtime, spec Spec, data []float32, op ReduceOp) (_ float32, err error) {
	if err := ctxcheck.Live(ctx, "collective.Reduce"); err != nil {
		return 0, err
	}
	if err := checkSpec(rt, &spec, "Reduce"); err != nil {
		return 0, err
	}
	if err := spec.checkReduceOp(op, "Reduce"); err != nil {
		return 0, err
	}
	if len(data) == 0 {
		return 0, spec.bad("no data to reduce")
	}
	c := newCollective(rt, spec)
	defer c.close(ctx, &err)
	pipes := make([]*ra.Pipeline, len(spec.Devices))
	for i, d := range spec.Devices {
		if pipes[i], err = c.pipeline(ctx, fmt.Sprintf("reduce%d", i), d, op.reduceKernel(), nil, max(spec.Chunk, 2)); err != nil {
			return 0, err
		}
	}
	vals, chunk := data, spec.Chunk
	for round := 1; ; round++ {
		pieces := cut(len(vals), chunk, func(k, off, n int) piece {
			return piece{pipe: pipes[k%len(pipes)], floats: vals[off : off+n], participant: -1}
		})
		res, err := c.round(ctx, fmt.Sprintf("reduce round %d", round), pieces)
		if err != nil {
			return 0, err
		}
		partials := make([]float32, len(pieces))
		for k := range pieces {
			if len(res[k]) != 1 {
				return 0, fmt.Errorf("ringactor: collective %q: reduce round %d chunk %d gave %d floats, want 1", spec.Name, round, k, len(res[k]))
			}
			partials[k] = res[k][0]
		}
		if len(partials) == 1 {
			return partials[0], nil
		}
		// Later rounds run on the first participant's kernel alone.
		vals, chunk, pipes = partials, max(spec.Chunk, 2), pipes[:1]
	}
}

// AllReduce reduces the participants' vectors elementwise by op and gives
// every participant the result: vectors[i] belongs to participant i (on
// device spec.Devices[i]); all have the same length. It returns one
// reduced vector per participant, all equal; vectors are not modified.
//
// It is the classic ring all-reduce. Each vector is cut into
// len(Devices) chunks; chunk c is reduced in ring order, participant c's
// floats combined with participant c+1's, the result with c+2's, ..., up
// to c+N-1's (mod N), and every participant gets every reduced chunk.
// spec.Path says how the data moves (a chunk longer than spec.Chunk
// floats goes as several messages either way):
//
//   - DeviceLinks (AutoPath's choice up to MaxDeviceLinkChunk floats a
//     chunk): chunk c is reduced by one pipeline, a chain of stages on
//     the devices of participants c+1, ..., c+N-1, each running
//     "ring_<op>" with its own participant's floats of the chunk as its
//     params; the running reduction passes from kernel to kernel over the
//     chain's links (peer, or host-staged where the topology has no peer
//     access; local between two participants on one device). The host
//     sends participant c's floats into the chain's head and takes the
//     reduced chunk from its exit; all N chains run at once. The
//     all-gather is the host copying each reduced chunk into every
//     participant's result, which is where the results go anyway.
//   - HostHops: reduce-scatter, N-1 steps: at step s participant i sends
//     its running chunk (i-s) mod N to participant i+1, whose ring kernel
//     ("pair_<op>") combines it with its own chunk, the two operands
//     travelling as one message; all-gather, N-1 steps through "identity"
//     kernels. The host carries each step's results from one kernel's
//     egress to the next step's ingress, and each step ends when all its
//     messages are back (the ring's step barrier).
//
// Both paths combine in the same order, so they give the same bits. Sums
// are exact for integers below 2²⁴ and within N*2⁻²⁴ times the sum of
// magnitudes for floats; every participant gets bit-identical results.
func AllReduce(ctx context.Context, rt *ra.Runtime, spec Spec, vectors [][]float32, op ReduceOp) (_ [][]float32, err error) {
	if err := ctxcheck.Live(ctx, "collective.AllReduce"); err != nil {
		return nil, err
	}
	if err := checkSpec(rt, &spec, "AllReduce"); err != nil {
		return nil, err
	}
	if err := spec.checkReduceOp(op, "AllReduce"); err != nil {
		return nil, err
	}
	n := len(spec.Devices)
	if len(vectors) != n {
		return nil, spec.bad("%d vectors for %d devices; give one vector per participant", len(vectors), n)
	}
	size := len(vectors[0])
	for i, v := range vectors {
		if len(v) != size {
			return nil, spec.bad("vector %d has %d floats and vector 0 has %d; all-reduce needs vectors of one length", i, len(v), size)
		}
	}
	if size == 0 {
		return nil, spec.bad("empty vectors: nothing to reduce")
	}
	path, err := spec.path(size)
	if err != nil {
		return nil, err
	}
	buf := make([][]float32, n)
	for i, v := range vectors {
		buf[i] = slices.Clone(v)
	}
	if n == 1 {
		return buf, nil // one participant: its vector is the reduction
	}
	c := newCollective(rt, spec)
	defer c.close(ctx, &err)
	if path == DeviceLinks {
		err = c.deviceLinks(ctx, spec, buf, op)
	} else {
		err = c.hostHops(ctx, spec, buf, op)
	}
	if err != nil {
		return nil, err
	}
	if testBeforeClose != nil {
		testBeforeClose(c.pipes)
	}
	return buf, nil
}

// hostHops is AllReduce over HostHops: buf's vectors become the result.
func (c *collective) hostHops(ctx context.Context, spec Spec, buf [][]float32, op ReduceOp) (err error) {
	n, size := len(buf), len(buf[0])
	combine := make([]*ra.Pipeline, n)
	pass := make([]*ra.Pipeline, n)
	for i, d := range spec.Devices {
		if combine[i], err = c.pipeline(ctx, fmt.Sprintf("rs%d", i), d, op.pairKernel(), nil, 2*spec.Chunk); err != nil {
			return err
		}
		if pass[i], err = c.pipeline(ctx, fmt.Sprintf("ag%d", i), d, "identity", nil, spec.Chunk); err != nil {
			return err
		}
	}
	lo := func(ch int) int { return ch * size / n } // chunk ch is [lo(ch), lo(ch+1))
	mod := func(x int) int { return ((x % n) + n) % n }
	// step sends, for every participant i, its chunk chunkOf(i) to
	// participant i+1 through kernels[i+1] and stores what comes back as
	// participant i+1's chunk.
	step := func(name string, chunkOf func(i int) int, kernels []*ra.Pipeline, pair bool) error {
		var pieces []piece
		for i := range n {
			j, ch := (i+1)%n, chunkOf(i)
			for off := lo(ch); off < lo(ch+1); off += spec.Chunk {
				m := min(spec.Chunk, lo(ch+1)-off)
				msg := buf[i][off : off+m] // copied into the link by the send
				if pair {
					msg = append(append(make([]float32, 0, 2*m), msg...), buf[j][off:off+m]...)
				}
				pieces = append(pieces, piece{pipe: kernels[j], floats: msg, chunk: ch, off: off, n: m, participant: j})
			}
		}
		res, err := c.round(ctx, name, pieces)
		if err != nil {
			return err
		}
		for k, p := range pieces {
			if len(res[k]) != p.n {
				return fmt.Errorf("ringactor: collective %q: %s chunk %d gave %d floats, want %d", spec.Name, name, p.chunk, len(res[k]), p.n)
			}
			copy(buf[p.participant][p.off:], res[k])
		}
		return nil
	}
	for s := range n - 1 {
		if err := step(fmt.Sprintf("reduce-scatter step %d", s), func(i int) int { return mod(i - s) }, combine, true); err != nil {
			return err
		}
	}
	for s := range n - 1 {
		if err := step(fmt.Sprintf("all-gather step %d", s), func(i int) int { return mod(i + 1 - s) }, pass, false); err != nil {
			return err
		}
	}
	return nil
}

var collectiveSeq atomic.Uint64

func (s *Spec) bad(format string, a ...any) error {
	return fmt.Errorf("%w %q: %s", ErrBadSpec, s.Name, fmt.Sprintf(format, a...))
}

// checkCollective fills in the defaults and checks what every collective
// needs.
func checkSpec(rt *ra.Runtime, spec *Spec, what string) error {
	if spec.Name == "" {
		spec.Name = fmt.Sprintf("collective%d", collectiveSeq.Add(1))
	}
	if err := naming.Check("collective", spec.Name, ""); err != nil {
		return fmt.Errorf("%w: %w", ErrBadSpec, err)
	}
	if len(spec.Devices) == 0 {
		return spec.bad("%s needs at least one device in Devices", what)
	}
	for i, d := range spec.Devices {
		if _, err := rt.Registry().Device(d); err != nil {
			return spec.bad("participant %d: %v", i, err)
		}
	}
	if spec.Chunk < 0 {
		return spec.bad("Chunk %d; give the floats per message, or 0 for %d", spec.Chunk, DefaultChunk)
	}
	if spec.Chunk == 0 {
		spec.Chunk = DefaultChunk
	}
	// The largest message is AllReduce's, two operands of Chunk floats.
	if most := (p2pqueue.MaxSlotSize - p2pqueue.SlotHeaderSize) / 8; spec.Chunk > most {
		return spec.bad("Chunk %d is more than a message holds; use at most %d", spec.Chunk, most)
	}
	return nil
}

func (s *Spec) checkReduceOp(op ReduceOp, what string) error {
	if !op.valid() {
		return s.bad("%v: use ReduceSum, ReduceMin or ReduceMax", op)
	}
	if s.Op != "" || len(s.Params) != 0 {
		return s.bad("%s takes its op as a ReduceOp; leave Op and Params (%q %v) empty", what, s.Op, s.Params)
	}
	return nil
}

// collective is one call's pipelines and the results and dead letters
// their pumps deliver.
type collective struct {
	rt    *ra.Runtime
	name  string
	pipes []*ra.Pipeline

	mu       sync.Mutex
	results  map[uint64][]float32
	dead     map[uint64]ra.DeadLetter
	outcomes int
	wake     chan struct{}
	nextID   uint64
	failed   bool
}

// piece is one message of a round and where its result belongs.
type piece struct {
	pipe        *ra.Pipeline
	id          uint64
	floats      []float32
	chunk       int // in its step; participant's chunk for AllReduce
	off, n      int // floats of the step's input it carries
	participant int // AllReduce's receiver; -1 otherwise
}

func newCollective(rt *ra.Runtime, spec Spec) *collective {
	return &collective{rt: rt, name: spec.Name, results: map[uint64][]float32{}, dead: map[uint64]ra.DeadLetter{}, wake: make(chan struct{}, 1)}
}

// cut splits size floats into chunks of at most chunk and makes a piece of
// each.
func cut(size, chunk int, mk func(k, off, n int) piece) []piece {
	pieces := make([]piece, 0, (size+chunk-1)/chunk)
	for off := 0; off < size; off += chunk {
		n := min(chunk, size-off)
		p := mk(len(pieces), off, n)
		p.chunk, p.off, p.n = len(pieces), off, n
		pieces = append(pieces, p)
	}
	return pieces
}

// pipeline builds and starts a one-stage pipeline of op on device whose
// messages hold up to floats floats.
func (c *collective) pipeline(ctx context.Context, role string, device int, op string, params []float32, floats int) (*ra.Pipeline, error) {
	o, err := kernels.Lookup(op)
	if err != nil {
		return nil, err
	}
	return c.build(ctx, role, []ra.StageSpec{{Name: op, Op: op, Params: params, Device: device, Stateful: o.Stateful()}}, floats)
}

// build builds and starts a pipeline of stages (a chain) whose messages
// hold up to floats floats, sizing their links.
func (c *collective) build(ctx context.Context, role string, stages []ra.StageSpec, floats int) (*ra.Pipeline, error) {
	slot := int(p2pqueue.ConfigFor(p2pqueue.MinCapacity, 4*floats).SlotSize)
	capacity := ra.DefaultCapacity // fewer slots when they are large: a link stays under 8 MiB
	for capacity > p2pqueue.MinCapacity && capacity*slot > 8<<20 {
		capacity /= 2
	}
	for i := range stages {
		stages[i].SlotSize, stages[i].Capacity = slot, capacity
	}
	p, err := c.rt.Build(ctx, ra.PipelineSpec{
		Name:         c.name + "-" + role,
		Stages:       stages,
		Deliver:      ra.Sink{Func: c.result},
		OnDeadLetter: c.deadLetter,
	})
	if err != nil {
		return nil, fmt.Errorf("ringactor: collective %q: %w", c.name, err)
	}
	c.pipes = append(c.pipes, p)
	if err := p.Start(ctx); err != nil {
		return nil, fmt.Errorf("ringactor: collective %q: %w", c.name, err)
	}
	return p, nil
}

func (c *collective) result(r ra.Result) {
	c.mu.Lock()
	c.results[r.ID] = r.Floats
	c.outcomes++
	c.mu.Unlock()
	c.notify()
}

// deadLetter may run on the sender's goroutine (inside SendBatch): it never
// blocks.
func (c *collective) deadLetter(d ra.DeadLetter) {
	c.mu.Lock()
	c.dead[d.ID] = d
	c.outcomes++
	c.mu.Unlock()
	c.notify()
}

func (c *collective) notify() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// round sends pieces, each pipeline's from its own goroutine, waits until
// every one has ended, and returns their results in the order of pieces,
// or a *ChunkError for the first piece lost.
func (c *collective) round(ctx context.Context, step string, pieces []piece) ([][]float32, error) {
	c.mu.Lock()
	target := c.outcomes + len(pieces)
	byPipe := map[*ra.Pipeline][]ra.Data{}
	var order []*ra.Pipeline
	for k := range pieces {
		c.nextID++
		pieces[k].id = c.nextID
		p := pieces[k].pipe
		if _, ok := byPipe[p]; !ok {
			order = append(order, p)
		}
		byPipe[p] = append(byPipe[p], ra.Data{ID: pieces[k].id, Floats: pieces[k].floats})
	}
	c.mu.Unlock()
	errs := make([]error, len(order))
	var wg sync.WaitGroup
	for i, p := range order {
		wg.Go(func() {
			ds := byPipe[p]
			for len(ds) > 0 {
				b := ds[:min(len(ds), 256)]
				n, err := p.SendBatch(ctx, b)
				if err != nil {
					errs[i] = fmt.Errorf("ringactor: collective %q: %s: %d of %d messages sent: %w", c.name, step, len(byPipe[p])-len(ds)+n, len(byPipe[p]), err)
					return
				}
				ds = ds[len(b):]
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		c.fail()
		return nil, err
	}
	if err := c.wait(ctx, target, step); err != nil {
		c.fail()
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([][]float32, len(pieces))
	var lost *ChunkError
	for k, p := range pieces {
		if d, dead := c.dead[p.id]; dead {
			if lost == nil {
				lost = &ChunkError{Collective: c.name, Step: step, Chunk: p.chunk, Offset: p.off, Len: p.n, Participant: p.participant, Dead: d}
			} else {
				lost.More++
			}
			delete(c.dead, p.id)
			continue
		}
		out[k] = c.results[p.id]
		delete(c.results, p.id)
	}
	if lost != nil {
		c.failed = true
		return nil, lost
	}
	return out, nil
}

// wait blocks until target messages have ended, or ctx ends.
func (c *collective) wait(ctx context.Context, target int, step string) error {
	for {
		c.mu.Lock()
		got := c.outcomes
		c.mu.Unlock()
		if got >= target {
			return nil
		}
		select {
		case <-c.wake:
		case <-ctx.Done():
			return fmt.Errorf("ringactor: collective %q: %s: %d messages still out: %w", c.name, step, target-got, ctx.Err())
		}
	}
}

func (c *collective) fail() {
	c.mu.Lock()
	c.failed = true
	c.mu.Unlock()
}

// close closes the call's pipelines, draining them when the call went well
// (there is nothing left in them then) and dead-lettering whatever they
// hold otherwise. It outlives ctx's cancellation by up to 10 s so that no
// kernel is left running. A failure to close becomes the call's error
// when it had none.
func (c *collective) close(ctx context.Context, callErr *error) {
	c.mu.Lock()
	drain := !c.failed && *callErr == nil
	c.mu.Unlock()
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	errs := make([]error, len(c.pipes))
	var wg sync.WaitGroup
	for i, p := range c.pipes {
		wg.Go(func() { errs[i] = p.Close(cctx, drain) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil && *callErr == nil {
		*callErr = fmt.Errorf("ringactor: collective %q: closing its pipelines: %w", c.name, err)
	}
}
