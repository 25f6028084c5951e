package kernels

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Payloads of the built-in ops are float32 vectors, little-endian, inline in
// the slot.

// DecodeFloats reads a float32 vector payload into dst (reusing its capacity).
func DecodeFloats(dst []float32, payload []byte) ([]float32, error) {
	if len(payload)%4 != 0 {
		return dst[:0], fmt.Errorf("kernels: payload of %d bytes is not a float32 vector", len(payload))
	}
	dst = dst[:0]
	for i := 0; i < len(payload); i += 4 {
		dst = append(dst, math.Float32frombits(binary.LittleEndian.Uint32(payload[i:])))
	}
	return dst, nil
}

// EncodeFloats appends v to dst as a float32 vector payload.
func EncodeFloats(dst []byte, v []float32) []byte {
	for _, x := range v {
		dst = binary.LittleEndian.AppendUint32(dst, math.Float32bits(x))
	}
	return dst
}
