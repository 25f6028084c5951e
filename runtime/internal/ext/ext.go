package ext

import (
	"context"
	"fmt"

	"github.com/ringactor/ringactor/p2pqueue"
	rk "github.com/ringactor/ringactor/ringkernel"
	ra "github.com/ringactor/ringactor/runtime"
	"github.com/ringactor/ringactor/runtime/internal/extid"
)

// Host is a runtime's hooks for its sub-packages.
type Host interface {
	// NewLink allocates and formats a link from device from to device to
	// (or p2pqueue.Host), placed by p2pqueue.Place from the registry's
	// topology, for pipelines to share (a stage group's steal links). id
	// names it in its header and in errors: ra.NewLinkID with an owner
	// from NewLinkOwner. Give it back with FreeLink once they have closed.
	NewLink(from, to int, capacity, slotSize int, id ra.LinkID) (*p2pqueue.Link, p2pqueue.Placement, error)
	// FreeLink gives a link made with NewLink back to its device's
	// memory, once every ring kernel it was given to has ended (a kernel
	// cut off with its stage function still running may use it until
	// then). Free a link only when the pipelines that use it have closed.
	// A link the runtime did not make, or one already freed, is refused
	// with extid.ErrNotALink.
	FreeLink(l *p2pqueue.Link) error
	// LiveLinks is how many links made with NewLink (a pipeline's own
	// included) have not been freed.
	LiveLinks() int
	// NewLinkOwner returns a new owner number for links made outside a
	// pipeline, apart from every pipeline's (Pipeline.Number).
	NewLinkOwner() uint32

	// DeliverTo hands a result to a sink as a pipeline's egress does: to
	// its Func, Chan (giving up when done ends) or PID. A slots sink
	// (WithSlots) takes raw batches only, so a Result for one is dropped:
	// refuse such a sink first with CheckResults.
	DeliverTo(done context.Context, sink ra.Sink, r ra.Result)
	// TellDeadLetter hands a dead letter to every subscriber spec names,
	// as a pipeline does its own, for messages of a spec ended outside a
	// Pipeline (a cluster pipeline's origin).
	TellDeadLetter(spec *ra.PipelineSpec, d ra.DeadLetter)
	// CheckResults returns an error when sink cannot take results handed
	// to it one at a time by DeliverTo: it names more than one of Func,
	// Chan and PID, or it is a slots sink. The zero Sink passes.
	CheckResults(sink ra.Sink) error

	// Claim takes role for one user of the runtime: it reports false if
	// the role is taken already; release gives it back.
	Claim(role extid.Role) (release func(), ok bool)

	// WithSteal returns spec with a stage group's steal links: in are
	// extra in-links its first stage reads (victims forward stolen work
	// into them), to its links to thieves, in thief order (ra.Steal.To
	// indexes them). Make them with NewLink.
	WithSteal(spec ra.PipelineSpec, in, to []*p2pqueue.Link) ra.PipelineSpec
	// StageKernel returns the ring kernel of p's stage name, its
	// ingress link (the one the pipeline's sends to it go into: its
	// Stats().Published counts them) and its device id, once p is built.
	StageKernel(p *ra.Pipeline, name string) (*rk.Kernel, *p2pqueue.Link, int, error)
	// WithSlots returns sink taking each batch of results undecoded,
	// straight from the egress link's slots (the payloads are valid
	// until slots returns), for a cluster segment that forwards them to
	// another process. slots must end every message it is given, passed
	// on or dead-lettered; they count as delivered in the pipeline.
	WithSlots(sink ra.Sink, slots func(ctx context.Context, hs []p2pqueue.Header, payloads [][]byte)) ra.Sink
}

// Of returns rt's hooks. rt is a Runtime made by ra.New (which registers
// them on its actor system); Of panics on any other.
func Of(rt *ra.Runtime) Host {
	e, ok := rt.System().Extensions.Get(extid.ID).(interface{ Host(*ra.Runtime) any })
	if !ok {
		panic(fmt.Sprintf("ringactor: no runtime extension on the actor system (id %d): a Runtime not made by runtime.New", extid.ID))
	}
	return e.Host(rt).(Host)
}
