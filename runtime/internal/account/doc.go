// Package account is a pipeline's message account: the one type whose
// counts say where every message is. It is pure (no I/O, no clock, no
// actors), in the way etcd raft keeps its quorum logic in a package of
// its own, so its rules are tested alone.
//
// Every message that enters is counted Sent once, before it is written
// or refused, and ends exactly once: Delivered or DeadLettered. A stage
// that sends each result to k stages makes k-1 Copied messages, which
// end like any other. InFlight is never stored: it is Sent + Copied -
// Delivered - DeadLettered, read in the order that keeps it from
// reading below what is really in flight's lower bound (ends first,
// then copies, Sent last), and clamped at 0 against the one window the
// order cannot close (a copy that ends before its stage has counted
// it).
//
// The counters are atomics: Account is safe for concurrent use, and
// its methods never block.
package account
