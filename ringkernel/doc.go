// Package ringkernel is one ring kernel: a stage function looping over its
// in-links on a device, with a control block the host commands it through
// and a trace ring it reports through.
//
// # Lifecycle
//
// Launch starts a kernel in state Launched; Activate lets it take messages,
// Deactivate makes it leave them queued, Terminate ends it, with or without
// draining. The table is the pure function Next, shared by the host (which
// refuses an invalid command with ErrTransition before posting it) and the
// loops (which apply the same table; device code implements it in
// kernels/cuda/ringactor.cuh). Commands go through the control block: the
// host writes the command word and then bumps a sequence number; the loop
// applies it and acknowledges the sequence number after storing its new
// state. Every path through a loop reads the control block, so Terminate
// always ends it; a stage function that never returns is reported as
// ErrHung, since a kernel cannot be killed, only asked to stop.
//
// A kernel whose in-links are all closed and drained ends by itself
// (Terminated) after closing its out-link, so closing a pipeline's ingress
// drains it stage by stage.
//
// # Accounting
//
// Every message taken from an in-link is either processed (the stage's
// result published to the out-link its route picks, or to each out-link
// under RouteAll, or consumed by a sink) or dropped:
// dead-lettered with a reason (stage error, decode error, oversize result,
// shutdown without drain) reported through the trace ring to OnDeadLetter.
// Status reads the counters from the control block: on links launched
// fresh, published = processed + dropped + queued, exactly once the kernel
// and its producers are still.
//
// # Backends
//
// Backend is the one narrow interface (memory and launch) behind which the
// loops run: package ringkernel/sim runs them on goroutines over the same
// p2pqueue code and control-block layout in Go memory; the CUDA backend
// runs kernels/cuda's persistent loop on a GPU. Everything else about a
// kernel (commands, status, the trace pump, dead letters) is common code
// here, with no backend branches.
//
// A backend owns its devices, as ggml-backend's do: it lists them
// (DeviceLister, each a Device with its memory, peers and Topology), says
// whether a device runs an op and, if not, why and where to run it instead
// (Supporter, UnsupportedError), and reads their live use (Sampler). Each
// backend package registers its Kind from its init (Register; Kinds lists
// them in the order "auto" tries them), and the runtime picks among the
// kinds as data. This package imports no backend.
//
// Registry is the devices a program found (the GPUs of one backend, then
// the CPU; runtime.Registry is this type): it names, selects and connects
// them (Lookup, Select, Connection, Chain).
//
// # Stages
//
// A Stage names a registered op (package kernels), its params, and whether
// it is stateful (one consumer, messages in order) or stateless (parallel
// workers on sim, one thread per message on CUDA). The kernel as a whole is
// the only consumer of each in-link and the only producer of its out-links:
// workers run the stage over a batch, results are published in message
// order, and in-slots are freed only after the whole batch is done.
package ringkernel
