package runtime

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"sync"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/ringactor/ringactor/kernels"
	"github.com/ringactor/ringactor/p2pqueue"
)

// Typed messages. Every message carries a 32-bit type id in its slot
// header; a Go type registered under an id (RegisterType) travels as:
//   - its raw little-endian bytes, when it is a fixed-layout struct
//     (kernels.LayoutOf: numbers and arrays of them, no pointers, slices,
//     strings or maps): written straight into the slot, and read by a
//     device stage as the C struct kernels.Layout.C gives;
//   - msgpack otherwise, for stages that run in Go.
//
// Two types are built in: []float32 (id 0, kernels.TypeFloats), what
// Data.Floats carries and every float op takes, and kernels.Keyed (id 1).
// The registry is the process's, like encoding/gob's: register a type
// once, before sending it (registering it again under the same id is a
// no-op).

// MessageType describes a registered message type.
type MessageType struct {
	ID   uint32
	Name string // the Go type, as %T prints it
	// Fixed: the type travels as its raw bytes; else as msgpack.
	Fixed bool
}

func (m MessageType) String() string {
	codec := "msgpack"
	if m.Fixed {
		codec = "fixed layout"
	}
	return fmt.Sprintf("%s (type %d, %s)", m.Name, m.ID, codec)
}

var (
	// ErrUnregisteredType: a message's Go type has no id; register it with
	// RegisterType.
	ErrUnregisteredType = errors.New("ringactor: unregistered message type")
	// ErrWrongType: a message's type is not the one its stage takes, or a
	// result is not of the type asked for.
	ErrWrongType = errors.New("ringactor: wrong message type")
)

// msgType is a registered type with its codec.
type msgType struct {
	MessageType
	goType reflect.Type
	// encode writes v (a T or *T) into dst and returns its length, or
	// p2pqueue.ErrTooLarge with the length it needs.
	encode func(v any, dst []byte) (int, error)
	decode func(b []byte) (any, error)
}

var registry struct {
	sync.RWMutex
	byID   map[uint32]*msgType
	byType map[reflect.Type]*msgType
}

func init() {
	registry.byID = map[uint32]*msgType{}
	registry.byType = map[reflect.Type]*msgType{}
	floats := &msgType{MessageType: MessageType{ID: kernels.TypeFloats, Name: "[]float32"}, goType: reflect.TypeFor[[]float32](),
		encode: func(v any, dst []byte) (int, error) {
			f := v.([]float32)
			if 4*len(f) > len(dst) {
				return 4 * len(f), p2pqueue.ErrTooLarge
			}
			out, _ := kernels.ViewFloats(dst[:4*len(f)], nil) // a slot: aligned
			return 4 * copy(out, f), nil
		},
		decode: func(b []byte) (any, error) { return kernels.DecodeFloats(nil, b) },
	}
	registry.byID[floats.ID] = floats
	registry.byType[floats.goType] = floats
	if _, err := register[kernels.Keyed](kernels.TypeKeyed); err != nil {
		panic(err) // a built-in that does not register is a bug here
	}
}

// RegisterType registers T under id, which must be kernels.FirstUserType
// or more (the ids below are the built-ins'), and returns its
// description. A fixed-layout struct travels as its raw bytes, any other
// type as msgpack. Registering T again under the same id returns the same
// description; another type under a taken id, or T under a second id, is
// an error.
func RegisterType[T any](id uint32) (MessageType, error) {
	if id < kernels.FirstUserType || id == kernels.TypeAny {
		return MessageType{}, fmt.Errorf("ringactor: type id %d for %v is reserved; pick one from %d to %d", id, reflect.TypeFor[T](), kernels.FirstUserType, kernels.TypeAny-1)
	}
	return register[T](id)
}

func register[T any](id uint32) (MessageType, error) {
	t := reflect.TypeFor[T]()
	if t.Kind() == reflect.Pointer || t.Kind() == reflect.Interface {
		return MessageType{}, fmt.Errorf("ringactor: register the type %v points to (a *T is sent as its T), not a pointer or interface", t)
	}
	m := &msgType{MessageType: MessageType{ID: id, Name: t.String()}, goType: t}
	if _, err := kernels.LayoutOf(t, ""); err == nil {
		m.Fixed = true
		m.encode = func(v any, dst []byte) (int, error) {
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
		m.decode = func(b []byte) (any, error) {
			var x T
			return x, kernels.DecodeFixed(&x, b)
		}
	} else {
		m.encode = func(v any, dst []byte) (int, error) {
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
		m.decode = func(b []byte) (any, error) {
			var x T
			if err := msgpack.Unmarshal(b, &x); err != nil {
				return nil, fmt.Errorf("ringactor: decoding a %v from msgpack: %w", t, err)
			}
			return x, nil
		}
	}
	registry.Lock()
	defer registry.Unlock()
	if old, ok := registry.byID[id]; ok {
		if old.goType == t {
			return old.MessageType, nil
		}
		return MessageType{}, fmt.Errorf("ringactor: type id %d is %s's; pick another for %v", id, old.Name, t)
	}
	if old, ok := registry.byType[t]; ok {
		return MessageType{}, fmt.Errorf("ringactor: %v is registered as type %d already; register each type once", t, old.ID)
	}
	registry.byID[id] = m
	registry.byType[t] = m
	return m.MessageType, nil
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

// Types lists the registered message types, by id.
func Types() []MessageType {
	registry.RLock()
	defer registry.RUnlock()
	ts := make([]MessageType, 0, len(registry.byID))
	for _, m := range registry.byID {
		ts = append(ts, m.MessageType)
	}
	sort.Slice(ts, func(i, j int) bool { return ts[i].ID < ts[j].ID })
	return ts
}

// TypeOf returns the registered type of v's Go type (a *T is a T).
func TypeOf(v any) (MessageType, error) {
	m, err := typeOfValue(v)
	if err != nil {
		return MessageType{}, err
	}
	return m.MessageType, nil
}

func typeOfValue(v any) (*msgType, error) {
	t := reflect.TypeOf(v)
	if t == nil {
		return nil, fmt.Errorf("%w: a nil value", ErrUnregisteredType)
	}
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return lookupType(t)
}

func typeFor[T any]() (*msgType, error) { return lookupType(reflect.TypeFor[T]()) }

func lookupType(t reflect.Type) (*msgType, error) {
	registry.RLock()
	m, ok := registry.byType[t]
	registry.RUnlock()
	if !ok {
		return nil, fmt.Errorf("%w: %v; register it with RegisterType[%v](id)", ErrUnregisteredType, t, t)
	}
	return m, nil
}

func typeByID(id uint32) (*msgType, bool) {
	registry.RLock()
	defer registry.RUnlock()
	m, ok := registry.byID[id]
	return m, ok
}

// typeName names a type id for errors and Describe.
func typeName(id uint32) string {
	if id == kernels.TypeAny {
		return "any type"
	}
	if m, ok := typeByID(id); ok {
		return fmt.Sprintf("%s (type %d)", m.Name, id)
	}
	return fmt.Sprintf("type %d", id)
}

// Value decodes a result of a registered type: a []float32 for a float
// vector, else a value of the type registered under r.Type.
func (r Result) Value() (any, error) {
	if r.Type == kernels.TypeFloats {
		return r.Floats, nil
	}
	m, ok := typeByID(r.Type)
	if !ok {
		return nil, fmt.Errorf("%w: result %d has type id %d, which no Go type is registered under", ErrUnregisteredType, r.ID, r.Type)
	}
	return m.decode(r.Bytes)
}

// As decodes a result as a T, which must be the type it carries.
func As[T any](r Result) (T, error) {
	var zero T
	m, err := typeFor[T]()
	if err != nil {
		return zero, err
	}
	if m.ID != r.Type {
		return zero, fmt.Errorf("%w: result %d is %s, not %s", ErrWrongType, r.ID, typeName(r.Type), typeName(m.ID))
	}
	v, err := r.Value()
	if err != nil {
		return zero, err
	}
	return v.(T), nil
}

// GoStage registers f as an op named name that runs in Go: it takes
// messages of type T and gives messages of type U (both registered, or
// []float32). It has no CUDA side, so it runs on simulated devices; f is
// called from one stage's kernel at a time per message (a stage with
// Workers calls it from several goroutines; a Stateful one, in order).
// An error from f dead-letters that message ("stage error").
func GoStage[T, U any](name string, f func(T) (U, error)) error {
	in, err := typeFor[T]()
	if err != nil {
		return fmt.Errorf("ringactor: Go stage %q takes: %w", name, err)
	}
	out, err := typeFor[U]()
	if err != nil {
		return fmt.Errorf("ringactor: Go stage %q gives: %w", name, err)
	}
	return kernels.Register(kernels.Op{Name: name, In: in.ID, Out: out.ID,
		Typed: func(_, _ []float32, inType uint32, b, dst []byte) (uint32, int, int, error) {
			v, err := in.decode(b)
			if err != nil {
				return 0, 0, 0, fmt.Errorf("%w: %w", kernels.ErrWrongType, err)
			}
			r, err := f(v.(T))
			if err != nil {
				return 0, 0, 0, err
			}
			n, err := out.encode(r, dst)
			if errors.Is(err, p2pqueue.ErrTooLarge) {
				return 0, 0, 0, fmt.Errorf("%w: the %s result is %d bytes, room for %d", kernels.ErrOutputTooSmall, out.Name, n, len(dst))
			}
			return out.ID, n, 0, err
		}})
}
