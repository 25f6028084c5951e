package ringkernel

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/ringactor/ringactor/barrier"
	"github.com/ringactor/ringactor/p2pqueue"
)

// ErrBadBarrier: a barrier request the kernel cannot carry out (no such
// participant, memory it cannot reach, a generation that does not grow),
// or one posted while the kernel's last barrier is still pending.
var ErrBadBarrier = errors.New("ringkernel: bad barrier request")

// HostBarrier is a Loop that runs on the host (the sim backend's) and
// reaches a barrier's flag array through its Go memory rather than its
// device address: ArriveAt hands it the participant's handle before
// posting CmdBarrier.
type HostBarrier interface {
	BarrierParticipant(p *barrier.Participant)
}

// kernelBarrier is the kernel's participation in one flag array.
type kernelBarrier struct {
	f     *barrier.Flags
	p     *barrier.Participant // claimed: the kernel is its only writer
	index int
	gen   uint64 // the last generation posted
}

// ArriveAt makes the kernel a participant of the flag-array barrier f
// (package barrier) at index, and posts CmdBarrier: once the consumed
// count of in-link on (its head, the link's raw index, as p2pqueue.Stats's
// Consumed; nil: in-link 0) reaches at, the kernel arrives at generation
// gen, after publishing the batch that got it there, taking no message
// from on past at meanwhile; then it waits, taking no message from any
// in-link, until
// every participant of f has reached gen. It keeps beating and reading
// commands while it waits: a terminate ends the wait. ArriveAt returns
// once the kernel has taken the command, not when it arrives (watch f).
//
// The kernel claims participant index of f at its first ArriveAt on f
// (barrier.Flags.Participant), so nothing else in this process writes
// its word; f must live in memory the kernel can reach: mapped or
// portable pinned memory on a GPU (its DeviceAddr), any memory on sim.
// gen must grow from one call to the next, and the last barrier posted
// must have been reached by the kernel first (ErrBadBarrier otherwise).
func (k *Kernel) ArriveAt(ctx context.Context, f *barrier.Flags, index int, gen uint64, on *p2pqueue.Link, at uint64) error {
	if f == nil || index < 0 || index >= f.N() {
		return fmt.Errorf("%w: stage %q: no participant %d", ErrBadBarrier, k.spec.Stage.Name, index)
	}
	link := 0
	if on != nil {
		link = slices.Index(k.spec.In, on)
		if link < 0 {
			return fmt.Errorf("%w: stage %q does not read link %s", ErrBadBarrier, k.spec.Stage.Name, on.Config().LinkID)
		}
	}
	hb, host := k.loop.(HostBarrier)
	if !host && f.Region().DeviceAddr == 0 {
		return fmt.Errorf("%w: stage %q: the flag array has no device address; allocate it in pinned memory (p2pqueue.PortablePinnedMemory)",
			ErrBadBarrier, k.spec.Stage.Name)
	}
	k.cmdMu.Lock()
	defer k.cmdMu.Unlock()
	kb := k.bar
	if kb == nil || kb.f != f {
		if kb != nil {
			if g, _ := kb.f.Generation(kb.index); g < kb.gen {
				return fmt.Errorf("%w: stage %q has not reached generation %d of its last barrier", ErrBadBarrier, k.spec.Stage.Name, kb.gen)
			}
		}
		p, err := f.Participant(index)
		if err != nil {
			return fmt.Errorf("%w: stage %q: %w", ErrBadBarrier, k.spec.Stage.Name, err)
		}
		kb = &kernelBarrier{f: f, p: p, index: index, gen: p.Last()}
		k.bar = kb
	}
	if index != kb.index {
		return fmt.Errorf("%w: stage %q is participant %d of this barrier, not %d", ErrBadBarrier, k.spec.Stage.Name, kb.index, index)
	}
	if g, _ := f.Generation(index); g < kb.gen {
		return fmt.Errorf("%w: stage %q has not reached generation %d of its last barrier", ErrBadBarrier, k.spec.Stage.Name, kb.gen)
	}
	if gen <= kb.gen {
		return fmt.Errorf("%w: stage %q: generation %d after %d", ErrBadBarrier, k.spec.Stage.Name, gen, kb.gen)
	}
	if err := k.faulted(); err != nil {
		return err
	}
	if _, err := Next(k.state(), CmdBarrier); err != nil {
		return fmt.Errorf("stage %q: %w", k.spec.Stage.Name, err)
	}
	if host {
		hb.BarrierParticipant(kb.p)
	}
	seq, ok := k.postBarrier(BarrierParams{Flags: f.Region().DeviceAddr, Index: uint32(index), Count: uint32(f.N()), Gen: gen, At: at, Link: uint32(link)})
	if !ok {
		return fmt.Errorf("stage %q: %s: %w: the loop ended %s", k.spec.Stage.Name, CmdBarrier, ErrTransition, k.state())
	}
	kb.gen = gen
	k.loop.Wake()
	return k.awaitAck(ctx, seq, CmdBarrier)
}

// postBarrier posts CmdBarrier unless the control block was freed (see post).
func (k *Kernel) postBarrier(p BarrierParams) (seq uint32, ok bool) {
	k.cbMu.RLock()
	defer k.cbMu.RUnlock()
	if k.final != nil {
		return 0, false
	}
	return k.cb.PostBarrier(p), true
}
