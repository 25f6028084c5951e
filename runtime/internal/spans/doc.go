// Package spans turns a pipeline's trace records into OpenTelemetry spans
// (docs/ARCHITECTURE.md §5): one trace per sampled message, a root span
// "send <pipeline>" (kind producer) from ingress to its last copy's end
// (parented on the sender's span when it had one), with one child span
// "process <pipeline>/<stage>" (kind consumer) per stage visited, all
// with the kernels' timestamps and the messaging conventions' attributes
// (package msgconv). The copies a RouteAll stage makes share the root.
//
// A message's events arrive from several goroutines (each stage's record
// pump, each exit's egress pump, senders) in any order, and in a graph
// neither the number of copies nor their paths are known in advance. So
// a trace counts tokens: each event ends one token of the stage the
// message came from (0: the host) and a stage's record makes tokens for
// the copies it sent on (its fanout: len(To) for RouteAll, else 1; an
// exit's one goes to its egress). The root starts with one host token and
// ends when every stage's tokens made equal those ended: the last event
// has arrived, whatever the order.
//
// Stages are named by id, as the pipeline launches its kernels: stage i
// of the list given to New has id i+1, and 0 is the host. The package
// knows nothing of actors, metrics or runtime's types: it is handed
// stage names and a dead letter's stage and reason as strings. The token
// count is pure and tested alone; Tracer adds the spans, and is safe for
// concurrent use.
package spans
