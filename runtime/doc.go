// Package runtime is ringactor's actor layer over protoactor-go: devices,
// stage actors, pipelines and their telemetry.
//
// # Devices and backends
//
// Each ring-kernel backend lists its own devices. New picks one by name
// (DeviceOptions.Backend) or uses the one in Config.Backend: "cuda" runs
// on the GPUs the CUDA driver reports (name, memory, SMs, compute
// capability and peer access from the driver; free memory from NVML where
// present); "sim" runs on RINGACTOR_SIM_DEVICES simulated devices (default
// 4) with a topology from RINGACTOR_SIM_P2P ("all", "none", or pairs like
// "0-1,2-3") saying which pairs have peer access. "auto" takes the GPUs
// when the CUDA backend can run them and says once, in one line, why it
// uses simulated devices otherwise; "cuda" where it cannot run is an error
// wrapping the cause (cuda.ErrNoDriver where there is no driver). Close
// releases a backend the runtime opened, after its kernels have ended.
// The CUDA backend does not yet run stage groups with stealing: Group
// returns its error.
//
// # Pipelines and stage actors
//
// Runtime.Build turns a PipelineSpec into ring kernels joined by links whose
// placement p2pqueue.Place chooses from the topology (same device, peer,
// host-staged); only each stage's ingress and the last stage's egress touch
// the host. Every stage is a protoactor actor whose mailbox is its device
// queue: Data sent to its PID is encoded straight into its ingress link;
// Activate, Deactivate, Stop and Stats reach Receive and are answered, so
// RequestFuture(pid, Stats{}) works. Results leave through the egress pump
// to a callback, a channel or any PID. Close drains (or not) stage by stage;
// every message ends delivered or dead-lettered with a reason, and Stats
// shows sent = delivered + dead-lettered + in flight.
//
// # Nothing lost, hung stages contained
//
// Every message that enters a pipeline ends once, delivered or
// dead-lettered with its id, stage and reason ("stage error", "decode
// error", "oversize payload", "shutdown without drain", "stage faulted",
// "pipeline closed", "send cancelled", "stage stopped", "mailbox full").
// Dead letters go to OnDeadLetter, DeadLetterChan and DeadLetterPID; the
// account is also exported as the metrics ringactor.pipeline.sent,
// .delivered, .dead_lettered and .in_flight.
//
// A full mailbox is answered per stage (StageSpec.Backpressure): Block waits
// for room until the sender's ctx ends; Reject dead-letters what does not
// fit and returns ErrMailboxFull at once.
//
// A watchdog reads every stage's heartbeat: a stage with work queued that
// has not gone round its loop for HangAfter is declared faulted (its Status
// says Faulted; a kernel cannot be killed, so its loop is abandoned and
// told to end if it ever returns). Its actor stops, so watchers get
// Terminated; the other stage actors and OnFault get StageFaulted; the
// pipeline is torn down without drain, and what the faulted stage held is
// dead-lettered by the host as "stage faulted". Close, graceful or not, is
// bounded by its ctx.
//
// # Messages that leave the process
//
// EncodeMessage and DecodeMessage carry Data, Result and DeadLetter as
// msgpack in a versioned envelope (the format is in codec.go); a sampled
// Data's span context travels as a W3C traceparent. Decoding bytes that are
// not such a message returns an error wrapping ErrBadMessage that says what
// was wrong, never a panic.
//
// # Stages on other nodes
//
// Runtime.Join makes the runtime a node of a protoactor cluster
// (NodeConfig: the automanaged provider for a fixed host list, or any
// provider, such as the in-memory test provider). Node.Build builds a
// ClusterPipeline whose StageSpec.Node names other nodes: consecutive
// stages on one node form a segment, run there as a local Pipeline by a
// cluster grain of the node's own kind ("ringactor.node.<name>"), so
// placement by name is protoactor cluster's own placement. Segments on
// different nodes are joined by batched links over protoactor remote: an
// egress batch travels as one message, the slots' bytes in a msgpack Batch
// inside a wrapperspb.BytesValue (wire.go has the format; encoders are
// reused, so steady state allocates per batch, not per message).
//
// The origin (the node that built the pipeline) owns the account. A
// message that leaves it is tracked until it comes back or a remote segment
// reports its dead letter; whoever takes it off that list ends it, so a
// result that arrives after its node was declared unreachable is dropped
// (counted by Late), never counted twice. A dead node (its watched segment
// terminates, or a request to it fails) turns what it held, and whatever is
// sent to it afterwards, into dead letters with reason "remote
// unreachable"; Rejoin places its segments again once a node of that name
// is back. ClusterOptions.Window bounds what is out on other nodes.
//
// # Stage groups, stealing, barriers and collectives
//
// Runtime.Group runs one stage on several devices behind one PID, split by
// a Policy: Static (equal shares), Dynamic (by measured throughput), Guided
// (shrinking chunks to the shortest queue) or MemoryAware (by free memory).
// With Steal, a coordinator reads the instances' queue depths and sends
// Steal{n, to} to the busiest instance's actor; its kernel forwards up to n
// queued messages over a dedicated link to the idlest, so each kernel stays
// the only consumer of its own queue. Order is not kept across a group;
// GroupStats balances over the whole group.
//
// Runtime.NewBarrier is the actor-level barrier: participants Arrive, all
// are answered Release once every one has, or a timeout naming who is
// missing (package barrier is the device-side flag array).
//
// ScatterGather, Reduce and AllReduce run collectives on ring kernels,
// each checked against Go in the tests. AllReduce follows the ring
// algorithm step by step; between steps the host carries each step's
// results into the next kernel's ingress (a kernel sees one message at a
// time, so the two operands of a step travel as one message).
//
// # Telemetry
//
// Sampled messages (PipelineSpec.SampleRatio, or Data.Sampled) get one
// trace each: a root span from ingress to delivery, parented on the span in
// Data.Context when there is one, and one span per stage whose times are
// the kernel's own records (queue wait and service time as attributes).
// Histograms of queue wait and service time, processed and dropped counters,
// queue depth and the pipeline's account go to the MeterProvider.
package runtime
