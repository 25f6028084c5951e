package msgtype

import (
	"errors"
	"strings"
	"testing"

	"github.com/ringactor/ringactor/kernels"
)

// A wish for a type: refused where no exit gives it (TypeAny gives any),
// taking only its own type and noting the others for the error.
func TestWant(t *testing.T) {
	registerTest(t)
	if _, err := WantFor[point]([]uint32{kernels.TypeFloats, labelType}); !errors.Is(err, ErrWrongType) ||
		!strings.Contains(err.Error(), "no exit of the pipeline gives msgtype.point (type 40); they give []float32 (type 0), msgtype.label (type 41)") {
		t.Fatalf("no exit gives point: %v", err)
	}
	if _, err := WantFor[point]([]uint32{kernels.TypeAny}); err != nil {
		t.Fatalf("an exit of any type: %v", err)
	}
	w, err := WantFor[point]([]uint32{labelType, pointType})
	if err != nil {
		t.Fatal(err)
	}
	base := errors.New("gave up")
	if w.Note(base) != base {
		t.Fatal("a note with nothing refused")
	}
	if w.Takes(labelType) || w.Takes(labelType) || !w.Takes(pointType) {
		t.Fatal("Takes")
	}
	if err := w.Note(base); !errors.Is(err, base) || !strings.Contains(err.Error(), "results of msgtype.label (type 41) came for it") {
		t.Fatalf("note: %v", err)
	}
}

// Routing by key reads fixed offsets: msgpack types are refused, the
// others pass.
func TestKeyable(t *testing.T) {
	registerTest(t)
	for _, id := range []uint32{kernels.TypeFloats, kernels.TypeKeyed, pointType, kernels.TypeAny, 999} {
		if err := Keyable(id); err != nil {
			t.Errorf("type %d: %v", id, err)
		}
	}
	if err := Keyable(labelType); err == nil || !strings.Contains(err.Error(), "msgtype.label (type 41) travels as msgpack") {
		t.Fatalf("label: %v", err)
	}
}
