package kernels

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"unsafe"

	"github.com/ringactor/ringactor/internal/order"
)

// Payloads of the built-in ops are float32 vectors, little-endian, inline in
// the slot.

// DecodeFloats reads a float32 vector payload into dst (reusing its capacity).
func DecodeFloats(dst []float32, payload []byte) ([]float32, error) {
	if len(payload)%4 != 0 {
		return dst[:0], fmt.Errorf("%w: %d bytes", ErrNotFloats, len(payload))
	}
	n := len(payload) / 4
	if cap(dst) < n {
		dst = make([]float32, n)
	}
	dst = dst[:n]
	if n > 0 && order.LittleEndian {
		// One bulk copy: payloads are little-endian, and so is this host.
		copy(unsafe.Slice((*byte)(unsafe.Pointer(&dst[0])), 4*n), payload)
		return dst, nil
	}
	for i := range dst {
		dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(payload[4*i:]))
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

// ErrNotFloats: a payload that is not a whole float32 vector.
var ErrNotFloats = errors.New("kernels: payload is not a float32 vector")

// ViewFloats returns b as a float32 vector without copying: the vector
// aliases b, so a stage reads a message and writes its result in place in
// queue memory. b must be a whole number of float32s; when it is not 4-byte
// aligned (never so in a queue slot) the floats are copied into scratch.
// Payloads are little-endian and so is every host ringactor runs on
// (p2pqueue refuses big-endian hosts).
func ViewFloats(b []byte, scratch []float32) ([]float32, error) {
	if len(b)%4 != 0 {
		return nil, fmt.Errorf("%w: %d bytes", ErrNotFloats, len(b))
	}
	if len(b) == 0 {
		return scratch[:0], nil
	}
	if uintptr(unsafe.Pointer(&b[0]))%4 != 0 {
		return DecodeFloats(scratch, b)
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(&b[0])), len(b)/4), nil
}
