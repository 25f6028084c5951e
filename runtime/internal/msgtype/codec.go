package msgtype

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/ringactor/ringactor/kernels"
	"github.com/ringactor/ringactor/p2pqueue"
)

// fixedCodec is the codec of a fixed-layout T (t): its raw bytes.
func fixedCodec[T any](t reflect.Type) (func(any, []byte) (int, error), func([]byte) (any, error)) {
	encode := func(v any, dst []byte) (int, error) {
		x, ok := valueOf[T](v)
		if !ok {
			return 0, fmt.Errorf("%w: %T is not a %v", ErrWrongType, v, t)
		}
		b := kernels.FixedBytes(&x)
		if len(b) > len(dst) {
			return len(b), p2pqueue.ErrTooLarge
		}
		return copy(dst, b), nil
	}
	decode := func(b []byte) (any, error) {
		var x T
		return x, kernels.DecodeFixed(&x, b)
	}
	return encode, decode
}

// msgpackCodec is the codec of any other T (t): msgpack, written in place
// into the slot.
func msgpackCodec[T any](t reflect.Type) (func(any, []byte) (int, error), func([]byte) (any, error)) {
	encode := func(v any, dst []byte) (int, error) {
		x, ok := valueOf[T](v)
		if !ok {
			return 0, fmt.Errorf("%w: %T is not a %v", ErrWrongType, v, t)
		}
		w := bytes.NewBuffer(dst[:0:len(dst)]) // capped: growing means too large
		if err := msgpack.NewEncoder(w).Encode(&x); err != nil {
			return 0, fmt.Errorf("ringactor: encoding a %v as msgpack: %w", t, err)
		}
		if w.Len() > len(dst) || &w.Bytes()[0] != &dst[0] { // grew out of dst: too large for the slot
			return w.Len(), p2pqueue.ErrTooLarge
		}
		return w.Len(), nil
	}
	decode := func(b []byte) (any, error) {
		var x T
		if err := msgpack.Unmarshal(b, &x); err != nil {
			return nil, fmt.Errorf("ringactor: decoding a %v from msgpack: %w", t, err)
		}
		return x, nil
	}
	return encode, decode
}

// valueOf reads v as a T (or a *T, not nil).
func valueOf[T any](v any) (T, bool) {
	switch x := v.(type) {
	case T:
		return x, true
	case *T:
		if x != nil {
			return *x, true
		}
	}
	var zero T
	return zero, false
}

// Refusal is why Encode keeps a message out of a stage; runtime maps it
// to its dead-letter reason.
type Refusal uint8

const (
	Taken        Refusal = iota // not refused
	Oversize                    // larger than the payload area ("oversize payload")
	WrongType                   // not the type the stage takes ("wrong type")
	Unregistered                // a value of a type never registered ("unregistered type")
)

// Encode writes a message's payload into buf, the payload area of a slot
// of the stage named stage, which takes type in (kernels.TypeAny: any):
// floats when value is nil, else value (a T or *T of a registered type;
// floats must then be nil). It returns the payload's type id and length,
// or why the message is refused and an error that says so.
func Encode(floats []float32, value any, in uint32, stage string, buf []byte) (uint32, int, Refusal, error) {
	if value == nil {
		if n := 4 * len(floats); n > len(buf) {
			return 0, 0, Oversize, fmt.Errorf("%w: %d floats, stage %q takes at most %d; raise its SlotSize", p2pqueue.ErrTooLarge, len(floats), stage, len(buf)/4)
		}
		if in != kernels.TypeFloats && in != kernels.TypeAny {
			return 0, 0, WrongType, fmt.Errorf("%w: a float32 vector, stage %q takes %s", ErrWrongType, stage, Name(in))
		}
		out, _ := kernels.ViewFloats(buf[:4*len(floats)], nil) // a slot: aligned
		return kernels.TypeFloats, 4 * copy(out, floats), Taken, nil
	}
	if floats != nil {
		return 0, 0, WrongType, fmt.Errorf("%w: the message sets both Floats and Value; set one", ErrWrongType)
	}
	m, err := Of(value)
	if err != nil {
		return 0, 0, Unregistered, err
	}
	if in != m.ID && in != kernels.TypeAny {
		return 0, 0, WrongType, fmt.Errorf("%w: %s, stage %q takes %s", ErrWrongType, Name(m.ID), stage, Name(in))
	}
	n, err := m.encode(value, buf)
	if errors.Is(err, p2pqueue.ErrTooLarge) {
		return 0, 0, Oversize, fmt.Errorf("%w: a %s of %d bytes, stage %q takes at most %d; raise its SlotSize", p2pqueue.ErrTooLarge, m.Name, n, stage, len(buf))
	}
	if err != nil {
		return 0, 0, WrongType, err
	}
	return m.ID, n, Taken, nil
}

// Payload is what a result carries of its value, as runtime.Result has
// it: its id (for errors), its type id, and its floats or bytes.
type Payload struct {
	ID     uint64
	Type   uint32
	Floats []float32
	Bytes  []byte
}

// Value decodes p: its Floats for a float vector, else a value of the
// type registered under p.Type.
func (p Payload) Value() (any, error) {
	if p.Type == kernels.TypeFloats {
		return p.Floats, nil
	}
	m, ok := ByID(p.Type)
	if !ok {
		return nil, fmt.Errorf("%w: result %d has type id %d, which no Go type is registered under", ErrUnregisteredType, p.ID, p.Type)
	}
	return m.decode(p.Bytes)
}

// As decodes p as a T, which must be the type it carries.
func As[T any](p Payload) (T, error) {
	var zero T
	m, err := For[T]()
	if err != nil {
		return zero, err
	}
	if m.ID != p.Type {
		return zero, fmt.Errorf("%w: result %d is %s, not %s", ErrWrongType, p.ID, Name(p.Type), Name(m.ID))
	}
	v, err := p.Value()
	if err != nil {
		return zero, err
	}
	return v.(T), nil
}
