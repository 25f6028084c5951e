package cluster

import "github.com/ringactor/ringactor/runtime/cluster/internal/wire"

// The msgpack codec for the messages that leave the process: a ra.Data
// sent to a remote stage, a ra.Result or ra.DeadLetter delivered to a
// remote PID or written to a file. The format is written down once, in
// package runtime/cluster/internal/wire (its codec.go gives it field by
// field); these are its public face.

// Codec limits and format constants.
const (
	// CodecVersion is the envelope version EncodeMessage writes and the
	// only one DecodeMessage reads.
	CodecVersion = wire.CodecVersion
	// MaxFloats is the longest float vector a message may carry (4 MiB of
	// float32): a decoder refuses a longer one before allocating it, so a
	// forged count cannot exhaust memory.
	MaxFloats = wire.MaxFloats
	// MaxText is the longest string field (stage name, reason, error text,
	// traceparent) in bytes.
	MaxText = wire.MaxText
)

// ErrBadMessage: bytes that are not a message this codec wrote. Every
// DecodeMessage error wraps it and says what was wrong.
var ErrBadMessage = wire.ErrBadMessage

// ErrNotEncodable: a value EncodeMessage cannot put on the wire (a type
// that does not travel, or one over the codec's limits).
var ErrNotEncodable = wire.ErrNotEncodable

// EncodeMessage encodes a ra.Data, ra.Result or ra.DeadLetter (or a
// non-nil pointer to one) for another process: an envelope [version, kind,
// body] of fixed-position msgpack arrays. Data.Parent (else the
// deprecated Data.Context) travels as its W3C traceparent only.
func EncodeMessage(m any) ([]byte, error) { return wire.EncodeMessage(m) }

// DecodeMessage decodes bytes written by EncodeMessage into a ra.Data,
// ra.Result or ra.DeadLetter value. A Data's Parent is the sender's span
// context (remote) when a traceparent travelled, the zero SpanContext
// otherwise; its Context is nil. Any other
// input is an error wrapping ErrBadMessage, saying what was wrong and
// where; DecodeMessage never panics, and allocates no more than the
// input's size in floats and strings.
func DecodeMessage(b []byte) (any, error) { return wire.DecodeMessage(b) }
