// Package cluster runs pipelines whose stages live in other processes:
// each process is a node of a protoactor cluster, and the stages on one
// node run there as an ordinary runtime.Pipeline. It also holds the msgpack
// codec for messages that leave the process. It builds on package
// runtime's exported API; runtime does not import it, so programs of local
// pipelines do not link the cluster stack (protoactor remote and cluster,
// gRPC, the providers).
//
// # Nodes and cluster pipelines
//
// Join makes a runtime a node of a protoactor cluster (NodeConfig: a fixed
// host list, checked over protoactor's automanaged protocol by ringactor's
// own provider, or any provider, such as the in-memory test provider).
// Node.Build builds a (cluster) Pipeline, a runtime.Flow, whose
// StageSpec.Node names other nodes: consecutive stages on one node form a
// segment, run there as a local runtime.Pipeline by a cluster grain of the node's
// own kind ("ringactor.node.<name>"), so placement by name is protoactor
// cluster's own placement. A pipeline that spans nodes is a chain of its
// stages in order on the default data path, with lanes and buffers only on
// this node's stages: Build refuses a graph, a DataPath, and lanes or
// buffers on another node's stage (ErrBadPipeline), which a segment's Build
// message would not carry. Segments on different nodes are joined by
// batched links over protoactor remote: an egress batch (taken raw through
// a slots sink, runtime's hook for it) travels as one message, the slots' bytes in a
// msgpack Batch inside a wrapperspb.BytesValue (package runtime/cluster/internal/wire has the format;
// encoders are reused, so steady state allocates per batch, not per
// message).
//
// # The origin's account
//
// The origin (the node that built the pipeline) owns the account. A
// message that leaves it is tracked until it comes back or a remote
// segment reports its dead letter; whoever takes it off that list ends it,
// so a result that arrives after its node was declared unreachable is
// dropped (counted by Late), never counted twice. A dead node (its watched
// segment terminates, or a request to it fails) turns what it held, and
// whatever is sent to it afterwards, into dead letters with reason "remote
// unreachable"; Rejoin places its segments again once a node of that name
// is back: restarted, or the same process resumed after a stall (the
// fixed-host-list provider lists a peer that left and answers again under
// a new member id, since protoactor blocks a member id that left for good,
// and drops a peer only after two failed checks in a row, so a node that
// was itself stopped keeps its peers). Options.Window bounds what is
// out on other nodes.
//
// # Size limits
//
// Every message up to MaxFloats (4 MiB of float32) crosses to another node,
// in any batch: a batch is cut into remote messages of at most 1 MiB of
// payloads (one message alone up to MaxFloats), and every node raises
// gRPC's message limits, on both ends of each link, above the most
// protoactor remote sends at once (internal/wire). A larger message is
// dead-lettered by its sender, "oversize payload", and never sent, so no
// size ends a link or makes a live node look dead. Every node of a cluster
// must run with these limits.
//
// # One trace across nodes
//
// The cluster pipeline decides which messages are sampled and opens a
// root span for each at the origin, from the send to its end there. Every
// segment traces its part under that root: locally through the Data's
// Parent, on other nodes through the root's W3C traceparent carried in
// the message's Batch entry (trace.go). Stats and Latency list the stages
// of every node: remote segments report their counters and latencies on
// request and in their answer to Close (report.go).
//
// # Messages that leave the process
//
// EncodeMessage and DecodeMessage carry runtime's Data, Result and
// DeadLetter as msgpack in a versioned envelope (the format is in
// internal/wire); a sampled Data's span context travels as a W3C traceparent.
// Decoding bytes that are not such a message returns an error wrapping
// ErrBadMessage that says what was wrong, never a panic.
package cluster
