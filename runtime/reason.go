package runtime

import (
	"github.com/ringactor/ringactor/runtime/internal/enum"

	rk "github.com/ringactor/ringactor/ringkernel"
)

//go:generate go run golang.org/x/tools/cmd/stringer@v0.52.0 -type=Reason -linecomment

// Reason is a dead letter's class: one of the constants below, a closed
// set (a misspelt reason does not compile). Its String is the name the
// docs, the traces (ringactor.dead_letter.reason) and the wire use;
// ParseReason reads one back. An invalid value (the zero Reason) reads
// "Reason(n)".
type Reason uint16

// The dead-letter reasons: the whole list (docs/ARCHITECTURE.md §6). Each
// one's name, its String, is its line comment.
const (
	// Reported by kernels (ringkernel.Reason; mapped by ReasonOf).
	//
	// ReasonStageError: the stage function failed on the message.
	ReasonStageError Reason = 1 + iota // stage error
	// ReasonDecodeError: a slot that does not decode (also at egress).
	ReasonDecodeError // decode error
	// ReasonOversize: larger than a slot (also refused at ingress, and by
	// a cluster's sender).
	ReasonOversize // oversize payload
	// ReasonShutdown: held by a stage closed without drain.
	ReasonShutdown // shutdown without drain
	// ReasonStageFaulted: held by, or sent to, a stage that faulted.
	ReasonStageFaulted // stage faulted
	// ReasonRouteError: no key, or a port the stage does not have.
	ReasonRouteError // route error
	// ReasonWrongType: not the type the stage takes (also at ingress).
	ReasonWrongType // wrong type
	// ReasonStagePanic: the stage function, or Sink.Func, panicked on the
	// message (ErrStagePanic).
	ReasonStagePanic // stage panic

	// Assigned by the host.
	//
	// ReasonPipelineClosed: sent once Close had begun (Send, or a stage's
	// PID).
	ReasonPipelineClosed // pipeline closed
	// ReasonStageStopped: held by, or sent to, a stage a Stop ended.
	ReasonStageStopped // stage stopped
	// ReasonSendCancelled: the sender's ctx ended while it waited for room.
	ReasonSendCancelled // send cancelled
	// ReasonMailboxFull: no room in a stage built with Reject.
	ReasonMailboxFull // mailbox full
	// ReasonQueueClosed: the stage's ingress link refused the write.
	ReasonQueueClosed // queue closed
	// ReasonUnregisteredType: a Value of a type never registered.
	ReasonUnregisteredType // unregistered type
	// ReasonSinkNotRead: a result the Chan sink did not take by the end of
	// Close.
	ReasonSinkNotRead // sink not read
	// ReasonBadRequest: a request the pipeline could not register (its
	// RequestError only).
	ReasonBadRequest // bad request
	// ReasonRemoteUnreachable: a cluster pipeline's stage on a node that
	// cannot be reached.
	ReasonRemoteUnreachable // remote unreachable

	reasonEnd = 1 + iota // untyped: not a Reason, so stringer leaves it out
)

// Reasons lists every dead-letter reason.
var Reasons = enum.All(ReasonStageError, reasonEnd)

// Valid reports whether r is one of the constants.
func (r Reason) Valid() bool { return r > 0 && r < reasonEnd }

// MarshalText writes the reason's name (so JSON and logs show "mailbox
// full", not a number).
func (r Reason) MarshalText() ([]byte, error) {
	return enum.Marshal(r, r.Valid(), "a dead-letter reason")
}

// UnmarshalText reads a reason's name (ParseReason).
func (r *Reason) UnmarshalText(b []byte) error { return enum.Unmarshal(r, b, ParseReason) }

// ParseReason is the reason named s, or an error naming the list.
func ParseReason(s string) (Reason, error) {
	return enum.Parse(s, ReasonStageError, reasonEnd, "a dead-letter reason", "runtime.Reasons")
}

// kernelReasons maps each kernel reason to the host's: by table, not by
// spelling.
var kernelReasons = map[rk.Reason]Reason{
	rk.ReasonStageError: ReasonStageError,
	rk.ReasonDecode:     ReasonDecodeError,
	rk.ReasonShutdown:   ReasonShutdown,
	rk.ReasonFaulted:    ReasonStageFaulted,
	rk.ReasonOversize:   ReasonOversize,
	rk.ReasonRoute:      ReasonRouteError,
	rk.ReasonWrongType:  ReasonWrongType,
	rk.ReasonPanic:      ReasonStagePanic,
}

// ReasonOf is the host's reason for a kernel's (ringkernel.Reason); a
// kernel reason the table lacks reads as a stage error.
func ReasonOf(r rk.Reason) Reason {
	if h, ok := kernelReasons[r]; ok {
		return h
	}
	return ReasonStageError
}
