// Package requests is a pipeline's correlation table: the requests in
// flight, by message id, each with whoever waits for its outcome. A
// request is an ordinary message whose outcome (its result or its dead
// letter) goes back to the one who asked instead of to the pipeline's
// sink; the pipeline's egress and dead-letter paths Answer by id, and a
// requester that gives up (its ctx ended) marks its request abandoned,
// so that its outcome, when it comes, is counted and dropped.
//
// The one race it settles: an answer that arrives while its requester
// gives up. Exactly one side wins, under the table's lock: either the
// answer took the waiter first, and GiveUp hands the requester that
// outcome, or the requester marked it abandoned first, and Answer
// reports the outcome abandoned. Never both, never neither.
//
// It is pure (no I/O, no actors, no clock), generic in the outcome's
// type, and safe for concurrent use. A table without requests costs one
// atomic load per Pending.
package requests
