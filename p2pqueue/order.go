package p2pqueue

import (
	"sync/atomic"
	"unsafe"
)

// The host side's memory-order rules, written once.
//
// Each index has exactly one writer. A side publishes with a release store
// after the plain writes it covers (slot contents for tail, "done reading"
// for head) and observes the other side's index with an acquire load before
// touching the slots it covers. Go's sync/atomic operations are sequentially
// consistent, which is at least acquire/release, and also orders the
// consumer's "parked" store before its re-read of tail against the producer's
// tail store before its read of "parked" (the wake-up handshake needs that).
// No read-modify-write is ever used: the memory may sit across PCIe, where
// atomics are not atomic on many platforms.

// publish stores v into the word at p with release semantics. It is
// storeRelease64: a plain store on amd64, where stores are never reordered
// with earlier stores (TSO) and a sequentially consistent XCHG would stall
// until the slot writes before it reach the other core; sync/atomic elsewhere
// and under the race detector, which must see the synchronisation.
func publish(p *uint64, v uint64) { storeRelease64(p, v) }

// publishSeqCst stores v with a full fence after it: for stores that a later
// load of the other side's word must not overtake (the doorbell handshake).
func publishSeqCst(p *uint64, v uint64) { atomic.StoreUint64(p, v) }

// observe loads the word at p with acquire semantics.
func observe(p *uint64) uint64 { return atomic.LoadUint64(p) }

func publish32(p *uint32, v uint32) { atomic.StoreUint32(p, v) }
func observe32(p *uint32) uint32    { return atomic.LoadUint32(p) }

// word64 and word32 point into region memory. The caller has checked bounds
// and RegionAlign alignment, so every field offset is naturally aligned.
func word64(b []byte, off int) *uint64 { return (*uint64)(unsafe.Pointer(&b[off])) }
func word32(b []byte, off int) *uint32 { return (*uint32)(unsafe.Pointer(&b[off])) }

// littleEndian reports whether this host stores words little-endian, as the
// layout requires for the atomically accessed fields.
var littleEndian = func() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}()
