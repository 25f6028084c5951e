package msgtype

import (
	"errors"
	"fmt"
	"reflect"
	"sort"
	"sync"

	"github.com/ringactor/ringactor/kernels"
	"github.com/ringactor/ringactor/p2pqueue"
)

var (
	// ErrUnregisteredType: a message's Go type has no id.
	ErrUnregisteredType = errors.New("ringactor: unregistered message type")
	// ErrWrongType: a message's type is not the one its stage takes, or a
	// result is not of the type asked for.
	ErrWrongType = errors.New("ringactor: wrong message type")
)

// Type is a registered message type with its codec.
type Type struct {
	ID    uint32
	Name  string // the Go type, as %T prints it
	Fixed bool   // it travels as its raw bytes; else as msgpack

	goType reflect.Type
	// encode writes v (a T or *T) into dst and returns its length, or
	// p2pqueue.ErrTooLarge with the length it needs.
	encode func(v any, dst []byte) (int, error)
	decode func(b []byte) (any, error)
}

var registry struct {
	sync.RWMutex
	byID   map[uint32]*Type
	byType map[reflect.Type]*Type
}

func init() {
	registry.byID = map[uint32]*Type{}
	registry.byType = map[reflect.Type]*Type{}
	floats := &Type{ID: kernels.TypeFloats, Name: "[]float32", goType: reflect.TypeFor[[]float32](),
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

// Register registers T under id, which must be kernels.FirstUserType or
// more and not kernels.TypeAny (the ids below are the built-ins'), and
// returns it. A fixed-layout struct travels as its raw bytes, any other
// type as msgpack. Registering T again under the same id returns the
// same type; another type under a taken id, or T under a second id, is
// an error.
func Register[T any](id uint32) (*Type, error) {
	if id < kernels.FirstUserType || id == kernels.TypeAny {
		return nil, fmt.Errorf("ringactor: type id %d for %v is reserved; pick one from %d to %d", id, reflect.TypeFor[T](), kernels.FirstUserType, kernels.TypeAny-1)
	}
	return register[T](id)
}

func register[T any](id uint32) (*Type, error) {
	t := reflect.TypeFor[T]()
	if t.Kind() == reflect.Pointer || t.Kind() == reflect.Interface {
		return nil, fmt.Errorf("ringactor: register the type %v points to (a *T is sent as its T), not a pointer or interface", t)
	}
	m := &Type{ID: id, Name: t.String(), goType: t}
	if _, err := kernels.LayoutOf(t, ""); err == nil {
		m.Fixed = true
		m.encode, m.decode = fixedCodec[T](t)
	} else {
		m.encode, m.decode = msgpackCodec[T](t)
	}
	registry.Lock()
	defer registry.Unlock()
	if old, ok := registry.byID[id]; ok {
		if old.goType == t {
			return old, nil
		}
		return nil, fmt.Errorf("ringactor: type id %d is %s's; pick another for %v", id, old.Name, t)
	}
	if old, ok := registry.byType[t]; ok {
		return nil, fmt.Errorf("ringactor: %v is registered as type %d already; register each type once", t, old.ID)
	}
	registry.byID[id] = m
	registry.byType[t] = m
	return m, nil
}

// Types lists the registered types, by id.
func Types() []*Type {
	registry.RLock()
	defer registry.RUnlock()
	ts := make([]*Type, 0, len(registry.byID))
	for _, m := range registry.byID {
		ts = append(ts, m)
	}
	sort.Slice(ts, func(i, j int) bool { return ts[i].ID < ts[j].ID })
	return ts
}

// Of returns the registered type of v's Go type (a *T is a T), or an
// error wrapping ErrUnregisteredType.
func Of(v any) (*Type, error) {
	t := reflect.TypeOf(v)
	if t == nil {
		return nil, fmt.Errorf("%w: a nil value", ErrUnregisteredType)
	}
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return lookup(t)
}

// For returns T's registered type, or an error wrapping
// ErrUnregisteredType.
func For[T any]() (*Type, error) { return lookup(reflect.TypeFor[T]()) }

func lookup(t reflect.Type) (*Type, error) {
	registry.RLock()
	m, ok := registry.byType[t]
	registry.RUnlock()
	if !ok {
		return nil, fmt.Errorf("%w: %v; register it with RegisterType[%v](id)", ErrUnregisteredType, t, t)
	}
	return m, nil
}

// ByID returns the type registered under id.
func ByID(id uint32) (*Type, bool) {
	registry.RLock()
	defer registry.RUnlock()
	m, ok := registry.byID[id]
	return m, ok
}

// Name names a type id for errors and Describe: "kernels.Keyed (type
// 1)", "any type" for kernels.TypeAny, "type 7" for an id no type is
// registered under.
func Name(id uint32) string {
	if id == kernels.TypeAny {
		return "any type"
	}
	if m, ok := ByID(id); ok {
		return fmt.Sprintf("%s (type %d)", m.Name, id)
	}
	return fmt.Sprintf("type %d", id)
}
