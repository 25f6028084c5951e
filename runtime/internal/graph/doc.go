// Package graph resolves a pipeline's stages into the graph the runtime
// builds: where each stage's results go (its next stages, from its To
// list, or a chain in order when no stage names any), whether its route
// fits its To list and its op, whether the graph fits the device loop's
// in-link and out-link limits and is free of cycles (bounded queues in a
// cycle can deadlock), and the message type that flows along each edge.
// It answers the questions later asked of a graph: how many messages a
// result makes downstream (Fanout), which stages a Stop ends (Upstream).
//
// It is pure: plain inputs (names, To lists, routes, ops' In and Out
// type ids), no I/O and no runtime types, in the way etcd raft keeps its
// quorum logic in a package of its own, so its rules are tested alone.
// Its errors say what is wrong and how to fix it, naming stages; the
// runtime wraps them in its ErrBadPipeline.
package graph
