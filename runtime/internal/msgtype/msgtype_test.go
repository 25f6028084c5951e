package msgtype

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/ringactor/ringactor/kernels"
	"github.com/ringactor/ringactor/p2pqueue"
)

// point is fixed layout; label is msgpack (a string is not fixed).
type point struct{ X, Y float32 }

type label struct {
	Text string
	N    int
}

const pointType, labelType = 40, 41

// registerTest registers the test types once: the registry is the
// process's, and registering again is a no-op.
func registerTest(t *testing.T) (pt, lt *Type) {
	t.Helper()
	pt, err := Register[point](pointType)
	if err != nil {
		t.Fatal(err)
	}
	lt, err = Register[label](labelType)
	if err != nil {
		t.Fatal(err)
	}
	return pt, lt
}

// The built-ins are there from init, in id order, before anything else.
func TestBuiltins(t *testing.T) {
	ts := Types()
	if len(ts) < 2 || ts[0].ID != kernels.TypeFloats || ts[0].Name != "[]float32" || ts[0].Fixed ||
		ts[1].ID != kernels.TypeKeyed || ts[1].Name != "kernels.Keyed" || !ts[1].Fixed {
		t.Fatalf("built-ins %+v", ts)
	}
	registerTest(t)
	if !slices.IsSortedFunc(Types(), func(a, b *Type) int { return int(a.ID) - int(b.ID) }) {
		t.Fatal("Types not in id order")
	}
	if m, err := Of(&kernels.Keyed{}); err != nil || m.ID != kernels.TypeKeyed {
		t.Fatalf("Of(*Keyed): %+v, %v", m, err)
	}
	if m, err := For[[]float32](); err != nil || m.ID != kernels.TypeFloats {
		t.Fatalf("For[[]float32]: %+v, %v", m, err)
	}
}

// Registering: reserved ids, pointers and interfaces are refused, one id
// per type and one type per id, and the same again returns the same.
func TestRegisterRules(t *testing.T) {
	pt, lt := registerTest(t)
	if !pt.Fixed || lt.Fixed || pt.Name != "msgtype.point" {
		t.Fatalf("point %+v, label %+v", pt, lt)
	}
	type other struct{ A float32 }
	for _, c := range []struct {
		err  error
		want string
	}{
		{second(Register[other](kernels.FirstUserType - 1)), "type id 15 for msgtype.other is reserved; pick one from 16 to 4294967294"},
		{second(Register[other](kernels.TypeAny)), "is reserved"},
		{second(Register[*other](50)), "register the type *msgtype.other points to (a *T is sent as its T), not a pointer or interface"},
		{second(Register[any](51)), "not a pointer or interface"},
		{second(Register[other](pointType)), "type id 40 is msgtype.point's; pick another for msgtype.other"},
		{second(Register[point](52)), "msgtype.point is registered as type 40 already; register each type once"},
	} {
		if c.err == nil || !strings.Contains(c.err.Error(), c.want) {
			t.Errorf("got %v, want an error saying %q", c.err, c.want)
		}
	}
	if again, err := Register[point](pointType); err != nil || again != pt {
		t.Fatalf("registering again: %+v, %v", again, err)
	}
	if _, ok := ByID(52); ok {
		t.Fatal("a refused registration took its id")
	}
}

func second(_ *Type, err error) error { return err }

// Lookups of what is not registered wrap ErrUnregisteredType.
func TestUnregistered(t *testing.T) {
	type unknown struct{ X int }
	for _, v := range []any{nil, 42, unknown{}, &unknown{}} {
		if _, err := Of(v); !errors.Is(err, ErrUnregisteredType) {
			t.Errorf("Of(%#v): %v", v, err)
		}
	}
	if _, err := Of(nil); err == nil || err.Error() != "ringactor: unregistered message type: a nil value" {
		t.Errorf("Of(nil): %v", err)
	}
	if _, err := For[unknown](); err == nil || !strings.Contains(err.Error(), "register it with RegisterType[msgtype.unknown](id)") {
		t.Errorf("For[unknown]: %v", err)
	}
}

func TestName(t *testing.T) {
	registerTest(t)
	for id, want := range map[uint32]string{
		kernels.TypeAny:    "any type",
		kernels.TypeFloats: "[]float32 (type 0)",
		pointType:          "msgtype.point (type 40)",
		999:                "type 999",
	} {
		if got := Name(id); got != want {
			t.Errorf("Name(%d) = %q, want %q", id, got, want)
		}
	}
}

// Each codec round-trips its values, as a T and as a *T, through a slot
// exactly as large as they need, and As reads them back.
func TestRoundTrip(t *testing.T) {
	registerTest(t)
	keyed := kernels.Keyed{Key: 3, Count: 2, Values: [8]float32{1, 2, 3}}
	lab := label{Text: "a label of some length", N: -7}
	for _, v := range []any{point{1, 2}, &point{3, 4}, keyed, &keyed, lab, &lab} {
		buf := make([]byte, 256)
		typ, n, refused, err := Encode(nil, v, kernels.TypeAny, "s", buf)
		if err != nil || refused != Taken {
			t.Fatalf("%T: %v (%d)", v, err, refused)
		}
		// Exactly n bytes is room enough; one fewer is not.
		if _, m, _, err := Encode(nil, v, kernels.TypeAny, "s", make([]byte, n)); err != nil || m != n {
			t.Fatalf("%T into %d bytes: %d, %v", v, n, m, err)
		}
		if _, _, refused, err := Encode(nil, v, kernels.TypeAny, "s", make([]byte, n-1)); refused != Oversize || !errors.Is(err, p2pqueue.ErrTooLarge) {
			t.Fatalf("%T into %d bytes: %d, %v", v, n-1, refused, err)
		}
		got, err := Payload{ID: 1, Type: typ, Bytes: buf[:n]}.Value()
		if err != nil {
			t.Fatal(err)
		}
		want := v
		switch p := v.(type) {
		case *point:
			want = *p
		case *kernels.Keyed:
			want = *p
		case *label:
			want = *p
		}
		if got != want {
			t.Fatalf("%T: decoded %+v, want %+v", v, got, want)
		}
	}
	buf := make([]byte, 64)
	typ, n, _, _ := Encode(nil, lab, labelType, "s", buf)
	if l, err := As[label](Payload{ID: 9, Type: typ, Bytes: buf[:n]}); err != nil || l != lab {
		t.Fatalf("As[label]: %+v, %v", l, err)
	}
}

// Floats travel as their bytes, as the float type.
func TestFloats(t *testing.T) {
	f := []float32{1, 2.5, -3}
	buf := make([]byte, 12)
	typ, n, refused, err := Encode(f, nil, kernels.TypeFloats, "s", buf)
	if typ != kernels.TypeFloats || n != 12 || refused != Taken || err != nil {
		t.Fatalf("floats: type %d, %d bytes, %d, %v", typ, n, refused, err)
	}
	if got, err := kernels.DecodeFloats(nil, buf); err != nil || !slices.Equal(got, f) {
		t.Fatalf("slot holds %v, %v", got, err)
	}
	// A float result is its Floats, whatever its bytes.
	if v, err := As[[]float32](Payload{Type: kernels.TypeFloats, Floats: f}); err != nil || !slices.Equal(v, f) {
		t.Fatalf("As[[]float32]: %v, %v", v, err)
	}
}

// Encode refuses, with the reason and the error text the dead letter
// carries, every message its stage cannot take.
func TestEncodeRefusals(t *testing.T) {
	registerTest(t)
	type unknown struct{ X int }
	for _, c := range []struct {
		floats []float32
		value  any
		in     uint32
		size   int
		want   Refusal
		is     error
		text   string
	}{
		{[]float32{1, 2, 3}, nil, kernels.TypeFloats, 8, Oversize, p2pqueue.ErrTooLarge, `3 floats, stage "s" takes at most 2; raise its SlotSize`},
		{[]float32{1}, nil, pointType, 64, WrongType, ErrWrongType, `ringactor: wrong message type: a float32 vector, stage "s" takes msgtype.point (type 40)`},
		{[]float32{1}, point{}, kernels.TypeAny, 64, WrongType, ErrWrongType, "the message sets both Floats and Value; set one"},
		{nil, unknown{}, kernels.TypeAny, 64, Unregistered, ErrUnregisteredType, "unknown"},
		{nil, point{}, labelType, 64, WrongType, ErrWrongType, `ringactor: wrong message type: msgtype.point (type 40), stage "s" takes msgtype.label (type 41)`},
		{nil, (*point)(nil), kernels.TypeAny, 64, WrongType, ErrWrongType, "*msgtype.point is not a msgtype.point"},
		{nil, (*label)(nil), kernels.TypeAny, 64, WrongType, ErrWrongType, "*msgtype.label is not a msgtype.label"},
		{nil, point{}, pointType, 4, Oversize, p2pqueue.ErrTooLarge, `a msgtype.point of 8 bytes, stage "s" takes at most 4; raise its SlotSize`},
	} {
		typ, n, refused, err := Encode(c.floats, c.value, c.in, "s", make([]byte, c.size))
		if refused != c.want || !errors.Is(err, c.is) || !strings.Contains(err.Error(), c.text) || typ != 0 || n != 0 {
			t.Errorf("%v / %#v into %s: type %d, %d bytes, refusal %d, %v; want refusal %d, %q", c.floats, c.value, Name(c.in), typ, n, refused, err, c.want, c.text)
		}
	}
}

// Decoding a result: an id no type has, or the wrong T, is an error.
func TestPayloadErrors(t *testing.T) {
	registerTest(t)
	if _, err := (Payload{ID: 5, Type: 999}).Value(); !errors.Is(err, ErrUnregisteredType) || !strings.Contains(err.Error(), "result 5 has type id 999, which no Go type is registered under") {
		t.Fatalf("unknown id: %v", err)
	}
	if _, err := As[point](Payload{ID: 6, Type: labelType}); !errors.Is(err, ErrWrongType) || !strings.Contains(err.Error(), "result 6 is msgtype.label (type 41), not msgtype.point (type 40)") {
		t.Fatalf("wrong T: %v", err)
	}
	if _, err := As[label](Payload{ID: 7, Type: labelType, Bytes: []byte{0xc1}}); err == nil || !strings.Contains(err.Error(), "decoding a msgtype.label from msgpack") {
		t.Fatalf("bad msgpack: %v", err)
	}
	if _, err := As[point](Payload{ID: 8, Type: pointType, Bytes: []byte{1}}); err == nil {
		t.Fatal("a short fixed payload decoded")
	}
}

// A Go op decodes its input, runs f, and encodes f's result; each of its
// failures is the kernels error the loop dead-letters it with.
func TestGoOp(t *testing.T) {
	registerTest(t)
	op, err := GoOp("test_label", func(p point) (label, error) {
		if p.X < 0 {
			return label{}, errors.New("negative x")
		}
		return label{Text: "point", N: int(p.X + p.Y)}, nil
	})
	if err != nil || op.Name != "test_label" || op.In != pointType || op.Out != labelType {
		t.Fatalf("op %+v, %v", op, err)
	}
	in := make([]byte, 8)
	Encode(nil, point{2, 3}, pointType, "s", in)
	out := make([]byte, 64)
	typ, n, port, err := op.Typed(nil, nil, pointType, in, out)
	if err != nil || typ != labelType || port != 0 {
		t.Fatalf("typed: %d, %d, %d, %v", typ, n, port, err)
	}
	if l, err := As[label](Payload{Type: typ, Bytes: out[:n]}); err != nil || l != (label{Text: "point", N: 5}) {
		t.Fatalf("result %+v, %v", l, err)
	}
	if _, _, _, err := op.Typed(nil, nil, pointType, in, out[:2]); !errors.Is(err, kernels.ErrOutputTooSmall) || !strings.Contains(err.Error(), "the msgtype.label result is") {
		t.Fatalf("small out slot: %v", err)
	}
	if _, _, _, err := op.Typed(nil, nil, pointType, in[:3], out); !errors.Is(err, kernels.ErrWrongType) {
		t.Fatalf("short input: %v", err)
	}
	Encode(nil, point{-1, 0}, pointType, "s", in)
	if _, _, _, err := op.Typed(nil, nil, pointType, in, out); err == nil || err.Error() != "negative x" {
		t.Fatalf("f's error: %v", err)
	}
	type unknown struct{ X int }
	if _, err := GoOp("t", func(unknown) (label, error) { return label{}, nil }); !errors.Is(err, ErrUnregisteredType) || !strings.Contains(err.Error(), `Go stage "t" takes`) {
		t.Fatalf("unregistered in: %v", err)
	}
	if _, err := GoOp("t", func(label) (unknown, error) { return unknown{}, nil }); !errors.Is(err, ErrUnregisteredType) || !strings.Contains(err.Error(), `Go stage "t" gives`) {
		t.Fatalf("unregistered out: %v", err)
	}
}
