package msgtype

import (
	"fmt"
	"slices"
	"strings"

	"github.com/ringactor/ringactor/kernels"
)

// Want is a request's wish for a result of one type (runtime.RequestAs):
// in a graph that copies a message to exits of several types, only a
// result of that type answers it, and the types of the others that came
// first are noted for the error of a request that ends unanswered.
type Want struct {
	Type *Type
	came []uint32
}

// WantFor is the wish for a T from a pipeline whose exits give the types
// exits (kernels.TypeAny: whatever each result is). It is refused, with
// an error wrapping ErrWrongType that names what they give, when no exit
// gives a T: such a request could never be answered.
func WantFor[T any](exits []uint32) (*Want, error) {
	t, err := For[T]()
	if err != nil {
		return nil, err
	}
	if slices.Contains(exits, t.ID) || slices.Contains(exits, kernels.TypeAny) {
		return &Want{Type: t}, nil
	}
	return nil, fmt.Errorf("%w: no exit of the pipeline gives %s; they give %s", ErrWrongType, Name(t.ID), names(exits))
}

// Takes reports whether a result of type id answers the request, and
// notes id when it does not. The requests table calls it under its lock,
// which orders it before Note.
func (w *Want) Takes(id uint32) bool {
	if id == w.Type.ID {
		return true
	}
	w.came = append(w.came, id)
	return false
}

// Note adds to err, a request's error, the types of the results that
// came for it and were no answer, if any.
func (w *Want) Note(err error) error {
	if len(w.came) == 0 {
		return err
	}
	return fmt.Errorf("%w (results of %s came for it, and went to the Deliver sink; none of %s)", err, names(w.came), Name(w.Type.ID))
}

// names names the distinct type ids of ids, in order.
func names(ids []uint32) string {
	var ns []string
	for _, id := range ids {
		if n := Name(id); !slices.Contains(ns, n) {
			ns = append(ns, n)
		}
	}
	return strings.Join(ns, ", ")
}

// Keyable refuses routing by key (RouteKey: the u32 at an offset in the
// result) on results of type id when that type travels as msgpack: the
// offset would read encoded bytes, whose place moves with the values.
// Float vectors, fixed-layout types and kernels.TypeAny (a stage fed
// several types) pass.
func Keyable(id uint32) error {
	m, ok := ByID(id)
	if !ok || id == kernels.TypeFloats || m.Fixed {
		return nil
	}
	return fmt.Errorf("%s travels as msgpack, whose bytes move with its values: RouteKey reads a u32 at a fixed offset; make the type fixed layout (numbers and arrays of them), or route in a Go stage that gives a fixed-layout type (a key and the value's id)", Name(id))
}
