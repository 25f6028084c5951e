package sim

import (
	"sync"

	"github.com/ringactor/ringactor/barrier"
	"github.com/ringactor/ringactor/p2pqueue"
	rk "github.com/ringactor/ringactor/ringkernel"
)

// barrierState is a kernel's part in a flag-array barrier (CmdBarrier),
// as the device loop's barrier_* methods: pending until its in-link's
// head reaches at (no batch from that link crosses it), then arrived and
// waiting, taking no message, until every participant has arrived.
type barrierState struct {
	ins []*p2pqueue.Consumer // every in-link, closed or not
	in  *p2pqueue.Consumer   // the pending barrier's

	mu   sync.Mutex           // next is the host's hand-over (ArriveAt)
	next *barrier.Participant // the participant handle of the command about to come

	pending bool
	p       *barrier.Participant
	gen, at uint64 // the pending barrier's
	waiting bool
	wgen    uint64 // the generation waited for
	seen    int    // participants below seen have reached wgen (words only grow)
}

// BarrierParticipant implements rk.HostBarrier.
func (k *kernel) BarrierParticipant(p *barrier.Participant) {
	k.bar.mu.Lock()
	k.bar.next = p
	k.bar.mu.Unlock()
}

// barrierPost takes a CmdBarrier's parameters: the participant handle
// the host handed over and the control block's words.
func (k *kernel) barrierPost() {
	b := &k.bar
	b.mu.Lock()
	p := b.next
	b.mu.Unlock()
	bp := k.cb.Barrier()
	if p == nil || uint32(p.Index()) != bp.Index || bp.Gen <= p.Last() || int(bp.Link) >= len(b.ins) {
		return // a command no ArriveAt posted: ignored, as the device loop ignores one it cannot check
	}
	b.pending, b.p, b.gen, b.at, b.in = true, p, bp.Gen, bp.At, b.ins[bp.Link]
}

// head is the barrier's in-link's consumed count (its raw head index).
func (b *barrierState) head() uint64 { return b.in.Link().Stats().Consumed }

// barrierHeld arrives once its in-link's head has reached the mark, and
// reports whether the kernel is waiting for the others: it takes no
// message then. A terminating kernel leaves the barrier.
func (k *kernel) barrierHeld() bool {
	b := &k.bar
	if !b.pending && !b.waiting {
		return false
	}
	if k.life == rk.Terminating || k.life == rk.Faulted {
		b.pending, b.waiting = false, false
		return false
	}
	if b.waiting {
		f := b.p.Flags()
		for b.seen < f.N() {
			if g, _ := f.Generation(b.seen); g < b.wgen {
				return true
			}
			b.seen++
		}
		b.waiting = false
	}
	if b.pending && b.head() >= b.at {
		// After the batch that got here was published (process releases
		// it before the next iteration): a release store of gen.
		if err := b.p.Arrive(b.gen); err == nil {
			b.waiting, b.wgen, b.seen = true, b.gen, 0
		}
		b.pending = false
		return b.waiting
	}
	return false
}

// barrierRoom is how many messages a batch from c may take: up to max,
// but none past a pending barrier's mark on its in-link.
func (k *kernel) barrierRoom(c *p2pqueue.Consumer, max int) int {
	b := &k.bar
	if !b.pending || c != b.in {
		return max
	}
	h := b.head()
	if h >= b.at {
		return 0
	}
	return int(min(uint64(max), b.at-h))
}
