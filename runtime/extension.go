package runtime

import (
	"context"
	"fmt"

	"github.com/asynkron/protoactor-go/extensions"

	"github.com/ringactor/ringactor/p2pqueue"
	rk "github.com/ringactor/ringactor/ringkernel"
	"github.com/ringactor/ringactor/runtime/internal/extid"
)

// The sub-packages (runtime/group, runtime/cluster, runtime/collective)
// need a few hooks no user does: links made outside a pipeline, a
// group's steal links and a segment's raw egress in a spec, delivery and
// dead letters outside a Pipeline, a typed claim. They reach them through
// one extension point, as protoactor's remote registers itself on an
// actor system by id: New registers extension under extid.ID, and
// runtime/internal/ext's Of asserts what it hands out to its typed Host
// interface (a test there fails if these methods drift from it). The
// types are unexported, so none of this is in go doc.

// extension is stateless: several runtimes may share one actor system
// (Config.System), so Host binds the hooks to the runtime asked for.
type extension struct{}

func (extension) ExtensionID() extensions.ExtensionID { return extid.ID }

// Host returns rt's hooks.
func (extension) Host(rt *Runtime) any { return host{rt} }

// host is one runtime's hooks; ext.Host documents each.
type host struct{ rt *Runtime }

func (h host) NewLink(from, to int, capacity, slotSize int, id LinkID) (*p2pqueue.Link, p2pqueue.Placement, error) {
	return h.rt.links.New(from, to, capacity, slotSize, id)
}

func (h host) FreeLink(l *p2pqueue.Link) error { return h.rt.links.Free(l) }
func (h host) LiveLinks() int                  { return h.rt.links.Live() }
func (h host) NewLinkOwner() uint32            { return h.rt.newLinkOwner() }

func (h host) DeliverTo(done context.Context, sink Sink, r Result) {
	sink.sink().To(done, r, h.rt.system.Root.Send)
}
func (h host) TellDeadLetter(spec *PipelineSpec, d DeadLetter) { h.rt.tellDeadLetter(spec, d) }
func (host) CheckResults(sink Sink) error                      { return sink.sink().Check(sink.slots != nil) }

func (h host) Claim(role extid.Role) (release func(), ok bool) { return h.rt.claim(role) }

func (host) WithSteal(spec PipelineSpec, in, to []*p2pqueue.Link) PipelineSpec {
	spec.stealIn, spec.stealTo = in, to
	return spec
}

func (host) StageKernel(p *Pipeline, name string) (*rk.Kernel, *p2pqueue.Link, int, error) {
	if s := p.byName[name]; s != nil && s.kernel != nil {
		return s.kernel, s.ingressLink, s.dev.ID, nil
	}
	return nil, nil, 0, fmt.Errorf("%w: pipeline %q has no built stage %q", ErrBadPipeline, p.spec.Name, name)
}

func (host) WithSlots(sink Sink, slots func(ctx context.Context, hs []p2pqueue.Header, payloads [][]byte)) Sink {
	sink.slots = slots
	return sink
}
