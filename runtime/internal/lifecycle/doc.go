// Package lifecycle ends a pipeline's ring kernels and accounts for what
// they held. Its one job is the order of an ending: which stages end,
// in which order, told to drain or not, and what a stage the host cut
// off held when it ended. It works on ringkernel kernels, p2pqueue links
// and the graph's next-lists; the runtime gives it its stages as plain
// views (Stages), its senders' gates as two callbacks, and a callback
// that counts each message a cut-off stage held as dead (the runtime
// names the reason). It imports no actors and no telemetry.
//
// A Stop to a stage ends it and every stage upstream of it
// (graph.Upstream), each before the stages it feeds: an ending kernel
// closes its out-links, and what it passed on is still read by the next
// (Stages.Stop). A Close ends every stage in stage order, after every
// stage has stopped taking messages; a stage cut off on the way leaves
// the stages after it undrained (Stages.Close). A drain first activates
// the stages a Deactivate left idle: those before an idle one could not
// drain into it.
//
// A ring kernel cannot be killed, only abandoned. The watchdog
// (Stages.Watch, the decision in package watchdog) reads each stage's
// heartbeat; a stage that has work queued and has not gone round its
// loop for the limit is declared faulted (Stages.Fault,
// ringkernel.Kernel.Fault), and the runtime tears the pipeline down
// without drain (Teardown). Every message the stage held ends as a dead
// letter, counted by the host from the stage's in-links, between head
// and tail, once the stages before it have ended (Stages.Close); the
// abandoned loop's own reports are ignored from then on, so nothing is
// counted twice. The same holds for a stage a Close abandoned (its ctx
// ended while the stage function ran).
package lifecycle
