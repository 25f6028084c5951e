// Package wire is the byte format of everything a cluster pipeline sends
// between nodes, written down once: the msgpack codec of the messages that
// leave the process (Data, Result, DeadLetter; codec.go), and the cluster's
// own messages in the same envelope (Batch, Build, Built, Close, Closed,
// Report?, Report; batch.go and report.go), with the transport limits that
// keep every one of them under gRPC's receive limit.
//
// It is pure: no actors, no network. Package runtime/cluster sends and
// receives these bytes over protoactor remote, and exports the codec as
// cluster.EncodeMessage and cluster.DecodeMessage. Every decoder refuses
// what it did not write, with an error wrapping ErrBadMessage, and never
// panics (FuzzDecodeBatch here, FuzzDecodeMessage in runtime/cluster).
// See docs/ARCHITECTURE.md §8.
package wire
