package kernels_test

import (
	"bytes"
	"errors"
	"math"
	"testing"

	"github.com/ringactor/ringactor/kernels"
)

// FuzzDecodeFloats decodes arbitrary bytes as a float32 vector payload:
// a length that is not a multiple of 4 is ErrNotFloats, anything else
// decodes, and re-encodes to the very same bytes (NaN payloads included,
// since the bits are copied, not the values). ViewFloats agrees with it.
func FuzzDecodeFloats(f *testing.F) {
	f.Add([]byte{})
	f.Add(kernels.EncodeFloats(nil, []float32{1, -2.5, float32(math.Inf(-1))}))
	f.Add(kernels.EncodeFloats(nil, []float32{math.Float32frombits(0x7fc00001), math.Float32frombits(0xffffffff)}))
	f.Add([]byte{1, 2, 3})
	f.Add([]byte{0, 0, 0x80, 0x3f, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		scratch := make([]float32, 2)
		v, err := kernels.DecodeFloats(scratch, b)
		if len(b)%4 != 0 {
			if !errors.Is(err, kernels.ErrNotFloats) {
				t.Fatalf("%d bytes decoded with %v, want ErrNotFloats", len(b), err)
			}
			if _, err := kernels.ViewFloats(b, nil); !errors.Is(err, kernels.ErrNotFloats) {
				t.Fatalf("ViewFloats of %d bytes: %v, want ErrNotFloats", len(b), err)
			}
			return
		}
		if err != nil || len(v) != len(b)/4 {
			t.Fatalf("%d bytes: %d floats, %v", len(b), len(v), err)
		}
		if again := kernels.EncodeFloats(nil, v); !bytes.Equal(again, b) {
			t.Fatalf("re-encoded % x, want % x", again, b)
		}
		// Appending keeps what was there.
		if again := kernels.EncodeFloats([]byte{9}, v); again[0] != 9 || !bytes.Equal(again[1:], b) {
			t.Fatalf("EncodeFloats with a prefix gave % x", again)
		}
		view, err := kernels.ViewFloats(b, nil)
		if err != nil || len(view) != len(v) {
			t.Fatalf("ViewFloats: %d floats, %v", len(view), err)
		}
		for i := range v {
			if math.Float32bits(view[i]) != math.Float32bits(v[i]) {
				t.Fatalf("ViewFloats[%d] = %08x, DecodeFloats %08x", i, math.Float32bits(view[i]), math.Float32bits(v[i]))
			}
		}
	})
}
