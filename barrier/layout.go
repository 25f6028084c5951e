package barrier

import (
	"fmt"

	"github.com/ringactor/ringactor/p2pqueue"
)

// Layout of a flag array (little-endian). These constants are the single
// source of truth: the CUDA header's #defines are generated from them
// (CUDAHeader), never written by hand.
//
//	offset          size  field
//	0               4     magic          identifies a ringactor barrier and its layout version
//	4               2     version
//	8               4     participants   n, 1..MaxParticipants
//	128 + i*128     8     generation of participant i (u64), alone on its 128-byte line
const (
	// Magic identifies a ringactor barrier ("RABR" in memory order).
	Magic uint32 = 0x52424152
	// Version is the layout version; Attach refuses any other.
	Version uint16 = 1

	// LineSize is the stride of the participants' words: one 128-byte line
	// each (a GPU L2 line, two host cache lines), so no two writers share
	// a line and a waiter's loads never contend with another's stores.
	LineSize = 128
	// HeaderSize is the header's size; the first line follows it.
	HeaderSize = 128
	// RegionAlign is the alignment the region's base needs (the link
	// queue's, so lines fall on line boundaries).
	RegionAlign = p2pqueue.RegionAlign

	OffMagic        = 0 // u32
	OffVersion      = 4 // u16
	OffParticipants = 8 // u32
	// OffLines is where participant 0's line starts.
	OffLines = HeaderSize
	// OffGeneration is the generation word's offset within a line.
	OffGeneration = 0 // u64

	// MaxParticipants bounds n (and so a region: 512 KiB at most).
	MaxParticipants = 4096
)

// Size returns the bytes a flag array of n participants needs.
func Size(n int) (int, error) {
	if n < 1 || n > MaxParticipants {
		return 0, fmt.Errorf("%w: %d participants; want 1..%d", ErrBadCount, n, MaxParticipants)
	}
	return HeaderSize + n*LineSize, nil
}

// lineOff is the offset of participant i's generation word.
func lineOff(i int) int { return OffLines + i*LineSize + OffGeneration }

// Image returns the initial contents of a flag array of n participants:
// what to copy into device memory the host cannot map (Init writes the
// same into host-visible memory).
func Image(n int) ([]byte, error) {
	size, err := Size(n)
	if err != nil {
		return nil, err
	}
	b := make([]byte, size)
	putU32(b[OffMagic:], Magic)
	putU16(b[OffVersion:], Version)
	putU32(b[OffParticipants:], uint32(n))
	return b, nil
}

func putU16(b []byte, v uint16) { b[0], b[1] = byte(v), byte(v>>8) }
func putU32(b []byte, v uint32) {
	b[0], b[1], b[2], b[3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
}
func getU16(b []byte) uint16 { return uint16(b[0]) | uint16(b[1])<<8 }
