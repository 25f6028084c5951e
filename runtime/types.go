package runtime

import (
	"github.com/ringactor/ringactor/kernels"
	"github.com/ringactor/ringactor/runtime/internal/msgtype"
)

// Typed messages (the package doc): the registry, the process's as
// encoding/gob's is, and the codecs are runtime/internal/msgtype's.

// MessageType describes a registered message type: ID, Name (the Go
// type, as %T prints it), and Fixed (it travels as its raw bytes; else
// as msgpack).
type MessageType = msgtype.Description

var (
	// ErrUnregisteredType: a message's Go type has no id; register it with
	// RegisterType.
	ErrUnregisteredType = msgtype.ErrUnregisteredType
	// ErrWrongType: a message's type is not the one its stage takes, or a
	// result is not of the type asked for.
	ErrWrongType = msgtype.ErrWrongType
)

// RegisterType registers T under id, which must be kernels.FirstUserType
// or more (the ids below are the built-ins'), and returns its
// description. A fixed-layout struct travels as its raw bytes, any other
// type as msgpack. Registering T again under the same id returns the same
// description; another type under a taken id, or T under a second id, is
// an error.
func RegisterType[T any](id uint32) (MessageType, error) { return msgtype.RegisterDescribed[T](id) }

// Types lists the registered message types, by id.
func Types() []MessageType { return msgtype.Descriptions() }

// TypeOf returns the registered type of v's Go type (a *T is a T).
func TypeOf(v any) (MessageType, error) { return msgtype.DescriptionOf(v) }

// typeName names a type id for errors and Describe.
var typeName = msgtype.Name

// payload is what r carries of its value.
func (r Result) payload() msgtype.Payload {
	return msgtype.Payload{ID: r.ID, Type: r.Type, Floats: r.Floats, Bytes: r.Bytes}
}

// Value decodes a result of a registered type: a []float32 for a float
// vector, else a value of the type registered under r.Type.
func (r Result) Value() (any, error) { return r.payload().Value() }

// As decodes a result as a T, which must be the type it carries.
func As[T any](r Result) (T, error) { return msgtype.As[T](r.payload()) }

// GoStage registers f as an op named name that runs in Go: it takes
// messages of type T and gives messages of type U (both registered, or
// []float32). It has no CUDA side, so it runs on the CPU (Device: CPU); f is
// called from one stage's kernel at a time per message (a stage with
// Workers calls it from several goroutines; a Stateful one, in order).
// An error from f dead-letters that message ("stage error").
func GoStage[T, U any](name string, f func(T) (U, error)) error {
	op, err := msgtype.GoOp(name, f)
	if err != nil {
		return err
	}
	return kernels.Register(op)
}
