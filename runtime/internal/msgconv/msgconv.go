// Package msgconv is how ringactor's spans follow OpenTelemetry's messaging
// semantic conventions (docs/ARCHITECTURE.md §5), in the version of
// package semconv/v1.43.0, the newest otel v1.47.0 ships, and how its
// tracers and meters name their instrumentation (Version, SchemaURL).
//
// ringactor is the messaging system ("ringactor"). A message's root span
// sends it: operation type and name "send", its destination the
// pipeline's name. A stage's span processes it: type and name "process",
// its destination the stage's mailbox, "<pipeline>/<stage>" (names hold no
// slash). A barrier's spans send an Arrive ("arrive") and process a phase
// ("process"), their destination the barrier actor, "barrier/<name>", and
// their message id the phase. A span is named "{operation} {destination}".
// The message id is its decimal string (the convention's type). What the
// conventions do not name stays under "ringactor.".
//
// It imports only the attribute API and semconv, so that every package
// that makes spans may use it (spans knows no metrics, meter no traces).
package msgconv

import (
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"

	"github.com/ringactor/ringactor/version"
)

const (
	// SchemaURL is the semantic conventions' schema the spans and metrics
	// follow: tracers and meters are obtained with it.
	SchemaURL = semconv.SchemaURL
	// Version is the instrumentation version of ringactor's tracers and
	// meters: the release.
	Version = version.Version
	// System is messaging.system's value: ringactor is its own system.
	System = "ringactor"

	OpSend    = "send"    // a message's root span: the message enters a pipeline
	OpProcess = "process" // a stage's span, a barrier's phase
	OpArrive  = "arrive"  // a barrier participant's wait: it sends an Arrive
)

// Send is a producer span's attributes: operation op (type send) of
// message id to destination, and more.
func Send(op, destination, id string, more ...attribute.KeyValue) []attribute.KeyValue {
	return append(attrs(semconv.MessagingOperationTypeSend, op, destination, id), more...)
}

// Process is a consumer span's attributes: operation op (type process) of
// message id at destination, and more.
func Process(op, destination, id string, more ...attribute.KeyValue) []attribute.KeyValue {
	return append(attrs(semconv.MessagingOperationTypeProcess, op, destination, id), more...)
}

func attrs(typ attribute.KeyValue, op, destination, id string) []attribute.KeyValue {
	return []attribute.KeyValue{semconv.MessagingSystemKey.String(System), typ, semconv.MessagingOperationName(op),
		semconv.MessagingDestinationName(destination), semconv.MessagingMessageID(id)}
}

// ID is message id as messaging.message.id holds it: its decimal string.
func ID(id uint64) string { return strconv.FormatUint(id, 10) }

// SpanName is the conventions' span name: "{operation} {destination}".
func SpanName(op, destination string) string { return op + " " + destination }

// Stage is a stage's destination: its mailbox, "<pipeline>/<stage>".
func Stage(pipeline, stage string) string { return pipeline + "/" + stage }

// Barrier is a barrier's destination: its actor, "barrier/<name>".
func Barrier(name string) string { return "barrier/" + name }

// ErrorType is error.type for a span that ends in error: the dead
// letter's reason, or what ended it.
func ErrorType(reason string) attribute.KeyValue { return semconv.ErrorTypeKey.String(reason) }

// BatchCount is messaging.batch.message_count: the messages one span
// processed (a barrier phase's arrivals).
func BatchCount(n int) attribute.KeyValue { return semconv.MessagingBatchMessageCount(n) }
