package cluster

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sync"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/ringactor/ringactor/p2pqueue"
	ra "github.com/ringactor/ringactor/runtime"
	"github.com/ringactor/ringactor/runtime/cluster/internal/wire"
)

// ErrRemoteUnreachable: a message was in, or bound for, a segment on a
// node that died or could not be reached; it is dead-lettered with reason
// "remote unreachable".
var ErrRemoteUnreachable = errors.New("ringactor: remote unreachable")

// DefaultRemoteWindow is how many messages a cluster pipeline lets be out
// on other nodes at once, per run of remote segments, unless
// Options.Window says otherwise.
const DefaultRemoteWindow = 8192

// excursion is a run of consecutive remote segments, from the origin's
// point of view: the messages that left the origin for it and have not
// come back (as an arrival at the next local segment or the sink, or as a
// dead letter a remote segment reported). The origin is the one place
// where such a message ends: whoever takes its id out of out ends it, so a
// result that arrives after its node was declared unreachable is dropped,
// not counted twice.
type excursion struct {
	cp          *Pipeline
	first, last int // segment indices of the run
	window      int

	mu   sync.Mutex
	out  map[uint64]int32 // ids out on the run (a count, for repeated user ids)
	n    int
	pid  *actor.PID // the run's first segment; nil while down
	down error      // why the run is down; nil while up
	room chan struct{}

	wmu sync.Mutex // one batch is encoded and sent at a time, in order
	w   *wire.BatchWriter
	idx []int // the messages of the batch being sent that go out
}

func newExcursion(cp *Pipeline, first, last, window int) *excursion {
	return &excursion{cp: cp, first: first, last: last, window: window, out: map[uint64]int32{},
		room: make(chan struct{}), w: wire.NewBatchWriter(), down: fmt.Errorf("%w: not built yet", ErrRemoteUnreachable)}
}

// send ends n messages: out on the run, or dead-lettered. It returns how
// many went out. A message over wire.MaxPayload is dead-lettered here, "wire.Oversize
// payload", and never sent. It waits for the window until ctx ends.
func (e *excursion) send(ctx context.Context, n int, at wire.EntryAt) (int, error) {
	if n == 0 {
		return 0, nil
	}
	e.wmu.Lock()
	defer e.wmu.Unlock()
	var big error
	e.idx = e.idx[:0]
	for i := range n {
		id, _, p, _ := at(i)
		if len(p) > wire.MaxPayload {
			err := wire.Oversize(id, len(p))
			e.dead(id, ra.ReasonOversize, err)
			big = cmp.Or(big, err)
			continue
		}
		e.idx = append(e.idx, i)
	}
	k := len(e.idx)
	if k == 0 {
		return 0, big
	}
	var pid *actor.PID
	for {
		e.mu.Lock()
		if e.down != nil {
			err := e.down
			e.mu.Unlock()
			e.deadAll(e.idx, at, ra.ReasonRemoteUnreachable, err)
			return 0, also(big, err)
		}
		if e.n == 0 || e.n+k <= e.window {
			for _, i := range e.idx {
				id, _, _, _ := at(i)
				e.out[id]++
			}
			e.n += k
			pid = e.pid
			e.mu.Unlock()
			break
		}
		room := e.room
		e.mu.Unlock()
		select {
		case <-room:
		case <-ctx.Done():
			err := fmt.Errorf("ringactor: waiting for room on the remote segments: %w", ctx.Err())
			e.deadAll(e.idx, at, ra.ReasonShutdown, err)
			return 0, also(big, err)
		}
	}
	root := e.cp.node.rt.System().Root
	e.w.Split(e.first, e.idx, at, func(b []byte) { root.Send(pid, wrap(b)) })
	return k, big
}

// also is err, with first before it when there is one.
func also(first, err error) error {
	if first == nil {
		return err
	}
	return errors.Join(first, err)
}

// deadAll dead-letters the messages idx names.
func (e *excursion) deadAll(idx []int, at wire.EntryAt, reason ra.Reason, err error) {
	for _, i := range idx {
		id, _, _, _ := at(i)
		e.dead(id, reason, err)
	}
}

// dead dead-letters one message at the run's first stage.
func (e *excursion) dead(id uint64, reason ra.Reason, err error) {
	s := e.cp.segs[e.first].stages[0]
	e.cp.deadLetter(ra.DeadLetter{ID: id, Stage: s.Name, Device: s.Device, Reason: reason, Err: err})
}

// sendData sends ra.Data (the pipeline's ingress when its first stage is
// remote), encoding floats into the payload bytes the slots would hold.
func (e *excursion) sendData(ctx context.Context, ds []ra.Data) (int, error) {
	total := 0
	for i := range ds {
		total += 4 * len(ds[i].Floats)
	}
	buf := make([]byte, total) // the batch's payloads; one allocation per batch
	offs := make([]int, len(ds)+1)
	for i := range ds {
		o := offs[i]
		for j, f := range ds[i].Floats {
			binary.LittleEndian.PutUint32(buf[o+4*j:], math.Float32bits(f))
		}
		offs[i+1] = o + 4*len(ds[i].Floats)
	}
	return e.send(ctx, len(ds), func(i int) (uint64, p2pqueue.Flags, []byte, string) {
		var flags p2pqueue.Flags
		tp := ""
		if ds[i].Sampled { // SendBatch decided, and opened the root
			flags, tp = p2pqueue.FlagSampled, e.cp.roots.traceparent(ds[i].ID)
		}
		return ds[i].ID, flags, buf[offs[i]:offs[i+1]], tp
	})
}

// arrive takes id out of the run; false means it already ended (its node
// was declared unreachable) and must be dropped.
func (e *excursion) arrive(id uint64) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.arriveLocked(id)
}

func (e *excursion) arriveLocked(id uint64) bool {
	c, ok := e.out[id]
	if !ok {
		return false
	}
	if c <= 1 {
		delete(e.out, id)
	} else {
		e.out[id] = c - 1
	}
	e.n--
	if e.n < e.window {
		close(e.room)
		e.room = make(chan struct{})
	}
	return true
}

// arriveBatch takes a batch's ids out under one lock; keep[i] says whether
// message i is still to be carried on.
func (e *excursion) arriveBatch(ids func(i int) uint64, keep []bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for i := range keep {
		c, ok := e.out[ids(i)]
		keep[i] = ok
		if !ok {
			continue
		}
		if c <= 1 {
			delete(e.out, ids(i))
		} else {
			e.out[ids(i)] = c - 1
		}
		e.n--
	}
	close(e.room)
	e.room = make(chan struct{})
}

// up marks the run reachable through pid, its first segment.
func (e *excursion) up(pid *actor.PID) {
	e.mu.Lock()
	e.pid, e.down = pid, nil
	e.mu.Unlock()
}

// isDown reports why the run is down, or nil.
func (e *excursion) isDown() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.down
}

// fail marks the run down and dead-letters every message out on it with
// reason, exactly once. A run already down is left as it is.
func (e *excursion) fail(reason ra.Reason, err error) {
	e.mu.Lock()
	if e.down != nil {
		e.mu.Unlock()
		return
	}
	e.down, e.pid = err, nil
	e.mu.Unlock()
	e.drain(reason, err)
}

// drain dead-letters whatever is out on the run.
func (e *excursion) drain(reason ra.Reason, err error) {
	e.mu.Lock()
	out := e.out
	e.out, e.n = map[uint64]int32{}, 0
	close(e.room)
	e.room = make(chan struct{})
	e.mu.Unlock()
	s := e.cp.segs[e.first].stages[0]
	for id, c := range out {
		for range c {
			e.cp.deadLetter(ra.DeadLetter{ID: id, Stage: s.Name, Device: s.Device, Reason: reason, Err: err})
		}
	}
}

// outstanding is how many messages are out on the run.
func (e *excursion) outstanding() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.n
}
