// Package stageactor is a pipeline stage as a protoactor actor whose
// mailbox is its ring kernel's ingress: data sent to the stage's PID is
// written straight into the device queue in the sender's goroutine (so a
// full ingress holds the sender back, as the stage's backpressure says),
// and only control messages (activate, deactivate, stop, stats, steal)
// and protoactor's own reach the actor's Receive, which drives the
// kernel and answers a request with the stage's status, or an error.
//
// It also keeps the stage PIDs of an actor system (Actors): data sent to
// a PID after its actor stopped (its pipeline closed, faulted or stopped
// it) reaches protoactor's dead-letter process, and is handed back to the
// stage, or to what is kept of it once its pipeline has closed, to be
// counted and dead-lettered with the reason rather than lost.
//
// The package knows none of runtime's types: it is generic in the data
// message (D), runtime's Data, and reads the control messages and a
// message's id, wraps a bare value and makes a Steal's answer through a
// Protocol; what a stage does with each kind of message is its Stage,
// and its kernel's commands a Kernel (a *ringkernel.Kernel). It has no
// telemetry and touches no link: runtime's stage does both behind Stage.
package stageactor
