package ringkernel

import (
	"fmt"
	"time"
)

// Status is a snapshot of a kernel, read from its control block and links
// without stopping it. Counters conserve: every message published to the
// in-links is processed, dropped, stolen, or still queued (exact once the kernel
// and its producers are still).
type Status struct {
	Stage string
	State State
	// Processed: messages the stage handled and passed on (or, for a sink,
	// consumed). Dropped: messages dead-lettered for any reason. Errors:
	// the dropped messages the stage function failed on.
	Processed, Dropped, Errors uint64
	// Stolen: messages forwarded to thieves (Kernel.Steal); they count as
	// consumed here and arrive in the thief's in-links.
	Stolen uint64
	// Traced is the number of trace records the kernel wrote.
	Traced uint64
	// Busy is the time the loop spent on batches of messages, where the
	// backend's devices MeasuresBusy (every backend of this module: sim,
	// the CPU and the CUDA device loop, in globaltimer ns).
	Busy time.Duration
	// Heartbeat is the last time the loop went round, in host time;
	// HeartbeatAge is how long ago that was.
	Heartbeat    time.Time
	HeartbeatAge time.Duration
	// InQueued are the in-links' depths, in order; InPublished the number
	// ever published to each. OutQueued is the out-links' depth, summed.
	InQueued    []int
	InPublished []uint64
	OutQueued   int
	// LastError is the last dead letter's cause, or nil.
	LastError *KernelError
}

// KernelError is the cause of a kernel's last dead letter or its fault.
type KernelError struct {
	Code      ErrorCode
	MessageID uint64
	Text      string // the stage's error text where the backend has one
}

func (e *KernelError) Error() string {
	if e.Text != "" {
		return fmt.Sprintf("message %d: %s (%s)", e.MessageID, e.Text, e.Code)
	}
	return fmt.Sprintf("message %d: %s", e.MessageID, e.Code)
}

// In is the number of messages ever published to the kernel's in-links.
func (s Status) In() uint64 {
	var n uint64
	for _, p := range s.InPublished {
		n += p
	}
	return n
}

// Queued is the number of messages waiting in the in-links.
func (s Status) Queued() uint64 {
	var n uint64
	for _, q := range s.InQueued {
		n += uint64(q)
	}
	return n
}

// Status reads the kernel's status. It reads, in this order: the state;
// each in-link's head; the counters; each in-link's tail (InPublished).
// A device loop stores its counters before it releases head
// (docs/ARCHITECTURE.md §4.1), and every loop counts a message only after
// its producer published it, so a reading in this order finds every
// message below head counted, and never more counted than published.
// While the kernel runs, a batch consumed between the readings may be
// counted twice (in Processed and in InQueued); once it is still, the
// reading is exact.
func (k *Kernel) Status() Status {
	// The state first: a reading of Terminated then finds the final counts.
	st := Status{Stage: k.spec.Stage.Name, State: k.state()}
	f := k.finalLinks()
	var heads []uint64
	if f == nil {
		for _, l := range k.spec.In {
			heads = append(heads, l.Stats().Consumed)
		}
	}
	c := k.Counters()
	if f != nil {
		st.InQueued = append([]int(nil), f.inQueued...)
		st.InPublished = append([]uint64(nil), f.inPublished...)
		st.OutQueued = f.outQueued
	} else {
		for i, l := range k.spec.In {
			ls := l.Stats()
			// Not capped at the link's capacity: tail is read after head,
			// so published minus that head may pass it for a moment, and
			// In() - Queued() must stay the head that was read.
			q := ls.Published - heads[i]
			if q > 1<<31 { // only a corrupt link reads so: as Stats does
				q = uint64(l.Cap())
			}
			st.InQueued = append(st.InQueued, int(q))
			st.InPublished = append(st.InPublished, ls.Published)
		}
		for _, l := range k.spec.Out {
			st.OutQueued += l.Len()
		}
	}
	st.Processed, st.Dropped, st.Errors, st.Traced, st.Stolen = c.Processed, c.Dropped, c.Errors, c.Traced, c.Stolen
	st.Busy = time.Duration(c.Busy)
	if c.Heartbeat != 0 {
		st.Heartbeat = k.loop.HostTime(c.Heartbeat)
		st.HeartbeatAge = max(time.Since(st.Heartbeat), 0)
	}
	if c.LastError != CodeNone {
		st.LastError = &KernelError{Code: c.LastError, MessageID: c.LastErrorID}
		if t := k.lastText.Load(); t != nil {
			st.LastError.Text = *t
		}
	}
	if f := k.hostFault.Load(); f != nil {
		st.State, st.LastError = Faulted, f
	}
	return st
}

// finalLinks is the freed kernel's last reading of its links, or nil
// while it runs (its links may be freed once it has ended).
func (k *Kernel) finalLinks() *cbFinal {
	k.cbMu.RLock()
	defer k.cbMu.RUnlock()
	return k.final
}
