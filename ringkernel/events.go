package ringkernel

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/ringactor/ringactor/kernels"
	"github.com/ringactor/ringactor/p2pqueue"
)

// ErrorCode is why a message was dead-lettered, as device code can say it:
// the stage function's negative return values and the loop's own reasons.
// The values are part of the layout shared with device code.
type ErrorCode int32

const (
	CodeNone           ErrorCode = 0
	CodeOutputTooSmall ErrorCode = -1  // RA_STAGE_ERR_OUTPUT_TOO_SMALL
	CodeDomain         ErrorCode = -2  // RA_STAGE_ERR_DOMAIN: input outside the op's domain
	CodeStage          ErrorCode = -3  // any other stage error
	CodeBadResult      ErrorCode = -4  // the stage returned more floats than the out slot holds
	CodeNotFloats      ErrorCode = -5  // payload is not a float32 vector
	CodeCorruptSlot    ErrorCode = -6  // the slot header could not be read
	CodeShutdown       ErrorCode = -7  // terminated without drain while queued
	CodeCorruptQueue   ErrorCode = -8  // an in- or out-link's indices are corrupt: the kernel faults
	CodeNoKey          ErrorCode = -9  // RouteKey: the result has no u32 at the key offset
	CodeBadPort        ErrorCode = -10 // RoutePort: the stage chose an out-link it does not have
	CodeWrongType      ErrorCode = -11 // the message's type is not the one the stage takes
	// CodeHung is the host's, never a device's: the kernel stopped beating
	// with work queued and was declared faulted (Kernel.Fault).
	CodeHung ErrorCode = -100
	// CodePanic is the sim backend's, never a device's: the Go stage
	// function panicked on the message (the loop recovered and went on).
	CodePanic ErrorCode = -101
)

var codeText = map[ErrorCode]string{
	CodeNone:           "none",
	CodeOutputTooSmall: "result larger than the out slot",
	CodeDomain:         "input outside the op's domain",
	CodeStage:          "stage error",
	CodeBadResult:      "stage returned an impossible length",
	CodeNotFloats:      "payload is not a float32 vector",
	CodeCorruptSlot:    "corrupt slot",
	CodeShutdown:       "shutdown without drain",
	CodeCorruptQueue:   "corrupt queue",
	CodeNoKey:          "result has no key at the route's key offset",
	CodeBadPort:        "stage chose a port it does not have",
	CodeWrongType:      "message of a type the stage does not take",
	CodeHung:           "stage hung",
	CodePanic:          "stage function panicked",
}

func (c ErrorCode) String() string {
	if s, ok := codeText[c]; ok {
		return s
	}
	return fmt.Sprintf("ErrorCode(%d)", int32(c))
}

// Reason is the class of a dead letter (docs/ARCHITECTURE.md §6).
type Reason uint32

const (
	ReasonStageError Reason = 1 + iota // the stage function failed on this message
	ReasonDecode                       // the message could not be decoded
	ReasonShutdown                     // the kernel was terminated without drain
	ReasonFaulted                      // the stage faulted
	ReasonOversize                     // the result did not fit the out slot
	ReasonRoute                        // the result could not be routed (no key, bad port)
	ReasonWrongType                    // the message's type is not the one its stage takes
	ReasonPanic                        // the stage function panicked on this message
)

var reasonText = map[Reason]string{
	ReasonStageError: "stage error",
	ReasonDecode:     "decode error",
	ReasonShutdown:   "shutdown without drain",
	ReasonFaulted:    "stage faulted",
	ReasonOversize:   "oversize payload",
	ReasonRoute:      "route error",
	ReasonWrongType:  "wrong type",
	ReasonPanic:      "stage panic",
}

func (r Reason) String() string {
	if s, ok := reasonText[r]; ok {
		return s
	}
	return fmt.Sprintf("Reason(%d)", uint32(r))
}

// reasonOf maps a code to its class.
func reasonOf(c ErrorCode) Reason {
	switch c {
	case CodeOutputTooSmall, CodeBadResult:
		return ReasonOversize
	case CodeNotFloats, CodeCorruptSlot:
		return ReasonDecode
	case CodeShutdown:
		return ReasonShutdown
	case CodeCorruptQueue, CodeHung:
		return ReasonFaulted
	case CodeNoKey, CodeBadPort:
		return ReasonRoute
	case CodeWrongType:
		return ReasonWrongType
	case CodePanic:
		return ReasonPanic
	}
	return ReasonStageError
}

// ErrStagePanic: a stage function panicked on a message. The loop that ran
// it recovers, dead-letters the message (CodePanic, ReasonPanic) with an
// error that wraps ErrStagePanic and holds the panic value and the
// goroutine's stack, and goes on with the next message.
var ErrStagePanic = errors.New("ringkernel: stage function panicked")

// textCut marks the end of a record's text that was cut to fit the
// record (RecMaxText): the whole error, where the loop kept it, is the
// loop's (CauseKeeper).
const textCut = " [cut]"

// CutText returns text as a record carries it: whole if it fits
// RecMaxText, otherwise cut, ending with a mark, and cut is true. A loop
// that cuts an error's text keeps the whole error for CauseKeeper.
func CutText(text string) (s string, cut bool) {
	if len(text) <= RecMaxText {
		return text, false
	}
	return text[:RecMaxText-len(textCut)] + textCut, true
}

// CauseKeeper is a Loop that keeps the whole error of each dead letter
// whose text it had to cut (CutText), so that DeadLetter.Err holds all of
// it (a stage panic's value and stack) rather than a record's 132 bytes.
// The sim backend's loops are; device loops write codes only.
type CauseKeeper interface {
	// TakeCause returns and forgets the oldest kept error of message id's
	// dead letters (a message copied by RouteAll may die twice at one
	// stage), or nil.
	TakeCause(id uint64) error
}

// CodeOf maps a stage function's Go error to the code device code would
// return for it.
func CodeOf(err error) ErrorCode {
	switch {
	case errors.Is(err, kernels.ErrOutputTooSmall):
		return CodeOutputTooSmall
	case errors.Is(err, kernels.ErrNegativeSqrt):
		return CodeDomain
	case errors.Is(err, kernels.ErrNotFloats):
		return CodeNotFloats
	case errors.Is(err, kernels.ErrWrongType), errors.Is(err, kernels.ErrBadFixed):
		return CodeWrongType
	case errors.Is(err, p2pqueue.ErrCorruptSlot):
		return CodeCorruptSlot
	}
	return CodeStage
}

// Trace ring records. Each is one message on the kernel's trace link: the
// slot header carries the message id (ID), the record kind (Type), the
// message's flags, the stage (Origin) and the message's enqueue time
// (Enqueued, device clock); the payload carries the rest.
const (
	RecordTrace      = 1 // a sampled message passed the stage
	RecordDeadLetter = 2 // a message was dead-lettered
	RecordFault      = 3 // the kernel faulted; the text says why

	RecOffDequeued = 0  // u64, device ns: the kernel took the message
	RecOffDone     = 8  // u64, device ns: the stage finished it
	RecOffCode     = 16 // i32, ErrorCode (dead letters)
	RecOffTextLen  = 20 // u32, bytes of text that follow
	RecOffFrom     = 24 // u32, the stage the message came from (its in-slot's Origin; 0: the host)
	RecOffText     = 28 // the error's text, when the backend has one
	// TraceSlotSize is the slot size of trace links.
	TraceSlotSize = 192
	// RecMaxText is the most error text a record carries.
	RecMaxText = TraceSlotSize - p2pqueue.SlotHeaderSize - RecOffText
)

// TraceRecord is one sampled message's pass through one stage, in host
// time (device clocks are converted with the launch-time calibration).
type TraceRecord struct {
	ID    uint64
	Stage uint32
	// From is the stage the message came from (0: the host). In a graph a
	// message may reach a stage by several paths, and copies of it
	// several times: the host's trace of it is complete when every copy
	// a stage made has been seen to arrive somewhere.
	From     uint32
	Flags    p2pqueue.Flags
	Enqueued time.Time // put into the stage's in-link
	Dequeued time.Time // taken by the kernel
	Done     time.Time // stage function finished
}

// QueueWait is how long the message waited in the in-link.
func (r TraceRecord) QueueWait() time.Duration {
	if r.Enqueued.IsZero() || r.Dequeued.Before(r.Enqueued) {
		return 0
	}
	return r.Dequeued.Sub(r.Enqueued)
}

// Service is how long the stage function took.
func (r TraceRecord) Service() time.Duration { return r.Done.Sub(r.Dequeued) }

// DeadLetter is a message that did not pass a stage, and why.
type DeadLetter struct {
	ID        uint64
	Stage     uint32
	StageName string
	From      uint32 // the stage the message came from (0: the host)
	Reason    Reason
	Code      ErrorCode
	Err       error // the stage's error text where the backend has one
}

func (d DeadLetter) String() string {
	return fmt.Sprintf("message %d dead at stage %q: %s: %v", d.ID, d.StageName, d.Reason, d.Err)
}

// EncodeRecord writes a trace record's payload into buf (at least
// TraceSlotSize-SlotHeaderSize bytes) and returns its length.
func EncodeRecord(buf []byte, dequeued, done uint64, code ErrorCode, from uint32, text string) int {
	binary.LittleEndian.PutUint64(buf[RecOffDequeued:], dequeued)
	binary.LittleEndian.PutUint64(buf[RecOffDone:], done)
	binary.LittleEndian.PutUint32(buf[RecOffCode:], uint32(code))
	binary.LittleEndian.PutUint32(buf[RecOffFrom:], from)
	n := copy(buf[RecOffText:RecOffText+RecMaxText], text)
	binary.LittleEndian.PutUint32(buf[RecOffTextLen:], uint32(n))
	return RecOffText + n
}

// decodeRecord reads a record payload; anything short or inconsistent is an
// error (trace memory is written by device code and is not trusted).
func decodeRecord(p []byte) (dequeued, done uint64, code ErrorCode, from uint32, text string, err error) {
	if len(p) < RecOffText {
		return 0, 0, 0, 0, "", fmt.Errorf("%w: trace record of %d bytes, want at least %d", p2pqueue.ErrCorruptSlot, len(p), RecOffText)
	}
	n := binary.LittleEndian.Uint32(p[RecOffTextLen:])
	if uint64(n) > uint64(len(p)-RecOffText) {
		return 0, 0, 0, 0, "", fmt.Errorf("%w: trace record claims %d bytes of text, has %d", p2pqueue.ErrCorruptSlot, n, len(p)-RecOffText)
	}
	return binary.LittleEndian.Uint64(p[RecOffDequeued:]), binary.LittleEndian.Uint64(p[RecOffDone:]),
		ErrorCode(int32(binary.LittleEndian.Uint32(p[RecOffCode:]))), binary.LittleEndian.Uint32(p[RecOffFrom:]),
		string(p[RecOffText : RecOffText+int(n)]), nil
}
