// Package watchdog decides when a pipeline's stage hangs: a stage with
// work queued whose loop has not gone round (its heartbeat has not moved)
// for longer than a limit, the pipeline's HangAfter. It is the decision
// only, pure: the runtime's watchdog goroutine feeds it looks (the time,
// and each stage's heartbeat, state and queue) and faults the stage it
// names (docs/ARCHITECTURE.md §3.1).
//
// A stall of the whole process (a GC pause, a frozen VM, CPU starvation,
// SIGSTOP) stops every loop's heartbeat and the watchdog alike, and is
// not a hang of a stage. So a stage's miss adds up only over the
// intervals between two looks that came on time (at most twice Interval
// apart: a late look counts for nothing) in which another running stage
// of the pipeline went round its loop (when it has others that run); a
// heartbeat that moved, a stage that is not Active, and one with nothing
// queued start the sum again. A stage is hung once its sum passes the
// limit.
package watchdog
