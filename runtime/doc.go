// Package runtime is ringactor's actor layer over protoactor-go: devices,
// stage actors, pipelines and their telemetry.
//
// # Devices and backends
//
// Each ring-kernel backend lists its own devices and says which ops they
// run (ringkernel.DeviceLister, Supporter, Sampler); the runtime builds
// its registry from that and asks the backend, naming none. Backend
// packages register their kind (ringkernel.Register); New picks one by
// name (DeviceOptions.Backend) or uses the one in Config.Backend: "cuda"
// runs on the GPUs the CUDA driver reports (name, memory, SMs, compute
// capability and peer access from the driver; free memory and links from
// NVML where present); "sim" runs on RINGACTOR_SIM_DEVICES simulated
// devices (default 4) with a topology from RINGACTOR_SIM_P2P ("all",
// "none", or pairs with link kinds like "0-1:nv4,2-3:nv2,*:sys"). "auto"
// takes the GPUs when the CUDA backend can run them and says once, on
// Config.Logger, why it uses simulated devices otherwise; "cuda" where it cannot
// run is an error wrapping the cause (cuda.ErrNoDriver where there is no
// driver). Close releases a backend the runtime opened, after its kernels
// have ended. The CUDA backend does not yet run stage groups with
// stealing (runtime/group): building one returns its error.
//
// The runtime links the CUDA backend (ringkernel/cuda) and the simulator
// by default, so that a program finds a GPU with no configuration: the
// CUDA libraries are loaded with dlopen at run time, so this costs nothing
// at build, and without a driver "auto" falls back to the simulator.
// Registration as database/sql drivers do, where each program imports the
// backend it wants, would let a forgotten import run a GPU program on
// simulated devices; a backend of another kind registers itself the same
// way and is named once a program imports it (docs/ARCHITECTURE.md §12).
//
// After the GPUs the registry lists the host's CPU as a device of its own
// (Registry.CPUDevice, kind "cpu"), run by the sim backend's goroutine
// loop (sim.NewCPU) whichever backend runs the GPUs. Stages whose op has
// only a Go side go there; Build refuses them on a GPU, as the device's
// backend answers (an error wrapping ringkernel.ErrUnsupported).
// Registry.Connection says how two devices connect in nvidia-smi topo -m
// terms (NV#, PIX, PXB, PHB, NODE, SYS), Registry.Chain picks GPUs for
// consecutive stages over the fastest links, and Runtime.Metrics snapshots each device's utilization, memory
// and link traffic and each stage's rate, also exported as OpenTelemetry
// metrics (docs/METRICS.md).
//
// # Pipelines and stage actors
//
// Runtime.Build turns a PipelineSpec into ring kernels joined by links whose
// placement p2pqueue.Place chooses from the topology (same device, peer,
// host-staged); only each stage's ingress and each exit's egress touch
// the host. Every stage is a protoactor actor whose mailbox is its device
// queue: Data sent to its PID is encoded straight into its ingress link;
// Activate, Deactivate, Stop and Stats reach Receive and are answered, so
// RequestFuture(pid, Stats{}) works. Results leave through the egress pump
// to a callback, a channel or any PID. Close drains (or not) stage by stage;
// every message ends delivered or dead-lettered with a reason, and Stats
// shows sent + copied = delivered + dead-lettered + in flight. DataPath picks the
// links' format and kernels' loop (flagged, warp: EXPERIMENTAL until GPU-measured).
//
// # Graphs
//
// A pipeline is a chain in stage order unless its stages name where their
// results go (StageSpec.To): then it is a graph, routed per stage with
// RouteOne, RouteAll (a copy to each; copies are counted in Copied),
// RouteRoundRobin, RouteKey (one key, one stage) or RoutePort (the op
// chooses, as the built-in branch does). Several stages may feed one, each
// over its own link; stages with no To are exits, and Result.Stage names
// the one a result left by. Build refuses cycles, naming their stages.
//
// # Typed messages
//
// A message is a float32 vector (Data.Floats) or a value of a registered
// type (Data.Value, or the bare value sent to a stage's PID). RegisterType
// gives a Go type an id: a fixed-layout struct travels as its own bytes
// (device stages read it as the C struct kernels.Layout.C writes), any
// other type as msgpack. Typed ops say what they take and give
// (kernels.Op.In, Out); GoStage turns a func(T) (U, error) into one. Build
// refuses edges that disagree on the type, naming both stages; a value of
// an unregistered type, or one its stage does not take, is dead-lettered
// ("unregistered type", "wrong type"). Results carry their type
// (Result.Type); As[T] decodes them.
//
// # Requests
//
// Pipeline.Request sends a message and returns its own result, correlated
// by message id, or a *RequestError carrying its dead letter; a Data (or
// typed value) sent to a stage's PID with RequestFuture is answered the
// same way, and RequestAs[U] decodes the result. Requests and plain sends
// share the queues and the account.
//
// # Nothing lost, hung stages contained
//
// Every message that enters a pipeline ends once, delivered or
// dead-lettered with its id, stage and reason: one of the Reason
// constants, listed in Reasons. Dead letters go to OnDeadLetter,
// DeadLetterChan and DeadLetterPID; the account (PipelineStats: Sent =
// Delivered + DeadLettered + InFlight) is also exported as the metrics
// ringactor.pipeline.sent, .delivered, .dead_lettered and .in_flight, and
// Pipeline.Idle waits until InFlight is 0. That holds at the edges too:
// data sent to a stage's PID during or after Close, or after a Stop, is
// counted and dead-lettered; a Chan sink nobody reads costs Close
// Sink.CloseWait, not its ctx, and its results are dead-lettered "sink
// not read". Calls refuse a nil ctx (ErrNilContext) and an ended one
// (its error, nothing done); a closed runtime or pipeline refuses work
// (ErrRuntimeClosed, ErrClosed); a stopped stage refuses messages
// (ErrStageStopped).
//
// A Stop sent to a stage's PID ends that stage and the stages that feed
// it (their results could go nowhere else), in graph order, drained or
// not; the stages after it keep running.
//
// A stage function that panics does not kill the process: the loop that
// runs it (a Go stage runs on the sim backend's goroutines) recovers, and
// that message is dead-lettered "stage panic" with an error wrapping
// ErrStagePanic that holds the panic value and stack; the stage goes on.
// A Sink.Func that panics has that result dead-lettered "stage panic" too;
// a panic in OnDeadLetter or OnFault is recovered so the runtime's own
// goroutine survives, and is published as a CallbackPanicked on the actor
// system's event stream.
//
// A full mailbox is answered per stage (StageSpec.Backpressure): Block waits
// for room until the sender's ctx ends; Reject dead-letters what does not
// fit and returns ErrMailboxFull at once.
//
// A watchdog reads every stage's heartbeat: a stage with work queued that
// has not gone round its loop for HangAfter is declared faulted (its Status
// says Faulted; a kernel cannot be killed, so its loop is cut off, or on a
// GPU abandoned and told to end if it ever returns). Time the whole
// process stood still (a GC pause, a frozen VM, SIGSTOP) does not count:
// a stage's miss adds up only while the watchdog itself ran on time and
// another stage of the pipeline went round its loop. The faulted stage's
// actor stops, so watchers get Terminated; the other stage actors and
// OnFault get StageFaulted; the pipeline is torn down without drain, and
// what the faulted stage held, the batch it was running included, is
// dead-lettered by the host as "stage faulted", once each. Close,
// graceful or not, is bounded by its ctx: a stage whose function has not
// returned when ctx ends is cut off (ringkernel.ErrHung) and what it held
// dead-lettered, so InFlight is 0 when Close returns. A pipeline gives
// its links back when it closes.
//
// # Packages built on this one
//
// Each builds on the exported API here (Build, Pipeline, the actor
// system), and on a few hooks no user needs (links made outside a
// pipeline, a stage group's steal links, a cluster segment's raw egress),
// which it reaches through the one extension New registers on the actor
// system (runtime/internal/ext). runtime imports none of them, so a
// program of local pipelines links no cluster stack:
//
//   - runtime/group: one stage on several devices behind one PID, split by
//     a policy, with work stealing between the instances' kernels.
//   - runtime/collective: barriers (of actors by name, and of ring kernels
//     and the host over a flag array: BarrierSpec.Stages), and
//     ScatterGather, Reduce and AllReduce on ring kernels (chunks over
//     device links between the devices, or hops through the host).
//   - runtime/cluster: pipelines whose stages run on other processes
//     (protoactor cluster nodes), and the msgpack codec for messages that
//     leave the process.
//
// # Telemetry
//
// Sampled messages (PipelineSpec.SampleRatio, or Data.Sampled) get one
// trace each, in OpenTelemetry's messaging conventions (messaging.system
// "ringactor", messaging.message.id the id's decimal string): a root span
// "send <pipeline>" (producer) from ingress to its last copy's end (and no
// earlier than its last stage span), parented on the span Data.Parent
// names when there is one, with ringactor.pipeline and, when the message (or a
// copy) was dead-lettered, the status Error, error.type and
// ringactor.dead_letter.reason; and one span "process <pipeline>/<stage>"
// (consumer) per stage passed, timed by the kernel's own records, with
// ringactor.stage, ringactor.device, ringactor.queue_wait_ns and
// ringactor.service_ns. A refused sampled message's root ends at once.
// Histograms of queue wait and service time, processed and dropped counters,
// queue depth and the pipeline's account go to the MeterProvider.
package runtime
