package runtime

import (
	"fmt"

	rk "github.com/ringactor/ringactor/ringkernel"
)

// Reason is a dead letter's class: one of the constants below, a closed
// set (a misspelt reason does not compile). Its String is the name the
// docs, the traces (ringactor.dead_letter.reason) and the wire use;
// ParseReason reads one back.
type Reason uint16

// The dead-letter reasons: the whole list (docs/ARCHITECTURE.md §6).
const (
	// Reported by kernels (ringkernel.Reason; mapped by ReasonOf).
	ReasonStageError   Reason = 1 + iota // the stage function failed on the message
	ReasonDecodeError                    // a slot that does not decode (also at egress)
	ReasonOversize                       // larger than a slot (also refused at ingress, and by a cluster's sender)
	ReasonShutdown                       // held by a stage closed without drain
	ReasonStageFaulted                   // held by, or sent to, a stage that faulted
	ReasonRouteError                     // no key, or a port the stage does not have
	ReasonWrongType                      // not the type the stage takes (also at ingress)
	ReasonStagePanic                     // the stage function, or Sink.Func, panicked on the message (ErrStagePanic)

	// Assigned by the host.
	ReasonPipelineClosed    // sent once Close had begun (Send, or a stage's PID)
	ReasonStageStopped      // held by, or sent to, a stage a Stop ended
	ReasonSendCancelled     // the sender's ctx ended while it waited for room
	ReasonMailboxFull       // no room in a stage built with Reject
	ReasonQueueClosed       // the stage's ingress link refused the write
	ReasonUnregisteredType  // a Value of a type never registered
	ReasonSinkNotRead       // a result the Chan sink did not take by the end of Close
	ReasonBadRequest        // a request the pipeline could not register (its RequestError only)
	ReasonRemoteUnreachable // a cluster pipeline's stage on a node that cannot be reached

	reasonEnd
)

var reasonNames = [reasonEnd]string{
	ReasonStageError:        "stage error",
	ReasonDecodeError:       "decode error",
	ReasonOversize:          "oversize payload",
	ReasonShutdown:          "shutdown without drain",
	ReasonStageFaulted:      "stage faulted",
	ReasonRouteError:        "route error",
	ReasonWrongType:         "wrong type",
	ReasonStagePanic:        "stage panic",
	ReasonPipelineClosed:    "pipeline closed",
	ReasonStageStopped:      "stage stopped",
	ReasonSendCancelled:     "send cancelled",
	ReasonMailboxFull:       "mailbox full",
	ReasonQueueClosed:       "queue closed",
	ReasonUnregisteredType:  "unregistered type",
	ReasonSinkNotRead:       "sink not read",
	ReasonBadRequest:        "bad request",
	ReasonRemoteUnreachable: "remote unreachable",
}

// Reasons lists every dead-letter reason.
var Reasons = func() []Reason {
	rs := make([]Reason, 0, reasonEnd-1)
	for r := ReasonStageError; r < reasonEnd; r++ {
		rs = append(rs, r)
	}
	return rs
}()

// String is the reason's name ("mailbox full"); an invalid value (the
// zero Reason) reads "Reason(n)".
func (r Reason) String() string {
	if r > 0 && r < reasonEnd {
		return reasonNames[r]
	}
	return fmt.Sprintf("Reason(%d)", uint16(r))
}

// Valid reports whether r is one of the constants.
func (r Reason) Valid() bool { return r > 0 && r < reasonEnd }

// MarshalText writes the reason's name (so JSON and logs show "mailbox
// full", not a number).
func (r Reason) MarshalText() ([]byte, error) {
	if !r.Valid() {
		return nil, fmt.Errorf("ringactor: %v is not a dead-letter reason", r)
	}
	return []byte(r.String()), nil
}

// UnmarshalText reads a reason's name (ParseReason).
func (r *Reason) UnmarshalText(b []byte) error {
	v, err := ParseReason(string(b))
	if err != nil {
		return err
	}
	*r = v
	return nil
}

// ParseReason is the reason named s, or an error naming the list.
func ParseReason(s string) (Reason, error) {
	for r := ReasonStageError; r < reasonEnd; r++ {
		if reasonNames[r] == s {
			return r, nil
		}
	}
	return 0, fmt.Errorf("ringactor: %q is not a dead-letter reason; the reasons are listed in runtime.Reasons", s)
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
