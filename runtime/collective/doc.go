// Package collective coordinates work across devices on top of package
// runtime's pipelines and actor system: an actor-level barrier, and the
// collectives ScatterGather, Reduce and AllReduce run on ring kernels.
//
// # Barriers
//
// NewBarrier spawns a barrier actor: participants (goroutines, actors,
// stage drivers) send Arrive to its PID, or call Await; every participant
// of a phase is answered Release once all have arrived, or with a
// *BarrierTimeoutError naming who is missing once the phase's Timeout has
// passed. Each wait and each phase is a span. With ring kernels among the
// participants (BarrierSpec.Stages) the barrier is package barrier's flag
// array instead: Mark sets each kernel's phase boundary in the stream of
// messages sent to its stage, the kernel arrives and waits on its device,
// and host participants Await with it (examples/phases).
//
// # Collectives
//
// ScatterGather, Reduce and AllReduce are built from one-stage pipelines
// (the ordinary runtime.Pipeline API, so they run on any backend pipelines
// run on) whose ring kernels do all the arithmetic: Go cuts the input into
// messages, routes them, and puts the results back in place by message id.
// AllReduce follows the ring algorithm over one of two paths (Spec.Path):
// DeviceLinks, the default, passes each chunk's running reduction from
// kernel to kernel over device links, the host only injecting and
// collecting; HostHops carries each step's results through the host into
// the next kernel's ingress. Both give the same bits. Every message ends as a result or a dead letter; a dead letter
// fails the call with a *ChunkError naming the chunk and the reason.
package collective

// scope names the tracer of this package's spans.
const scope = "github.com/ringactor/ringactor/runtime/collective"
