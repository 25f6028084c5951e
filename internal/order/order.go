// Package order is the host side's memory-order rule for memory shared with
// another agent (a GPU, a peer, the other end of a link), written once for
// p2pqueue, barrier and ringkernel.
//
// Every shared word has exactly one writer. A side publishes with a release
// store after the plain writes the word covers (a queue's slot contents
// before its tail, "done reading" before its head, a participant's work
// before its barrier flag): the writes before StoreRelease64 synchronize
// before any read that follows a LoadAcquire64 observing the stored value.
// Go's sync/atomic operations are sequentially consistent, which is at least
// acquire/release, and StoreSeqCst64 also orders a store before a later load
// of another word (a wake-up handshake needs that).
//
// No read-modify-write is offered: the memory may sit across PCIe, where
// atomics are not atomic on many platforms.
//
// Words are little-endian in every layout: callers check LittleEndian before
// viewing region memory as words.
package order

import (
	"sync/atomic"
	"unsafe"
)

// StoreRelease64 stores v into the word at p with release semantics. On
// amd64 (without the race detector) it is a plain store: x86 never reorders
// a store with earlier stores (TSO), and a sequentially consistent XCHG
// would stall until the writes before it reach the other core. Elsewhere,
// and under the race detector, which must see the synchronization, it is
// sync/atomic.
func StoreRelease64(p *uint64, v uint64) { storeRelease64(p, v) }

// StoreSeqCst64 stores v with a full fence after it, for a store that a
// later load of another word must not overtake.
func StoreSeqCst64(p *uint64, v uint64) { atomic.StoreUint64(p, v) }

// LoadAcquire64 loads the word at p with acquire semantics.
func LoadAcquire64(p *uint64) uint64 { return atomic.LoadUint64(p) }

// StoreRelease32 and LoadAcquire32 are the rule for 32-bit words.
func StoreRelease32(p *uint32, v uint32) { atomic.StoreUint32(p, v) }

// StoreSeqCst32 stores v with a full fence after it, as StoreSeqCst64: a
// doorbell handshake's announcement (a consumer's parked flag) must not be
// overtaken by its later load of the other side's word. StoreRelease32 is
// sync/atomic today too, but only this one promises the fence.
func StoreSeqCst32(p *uint32, v uint32) { atomic.StoreUint32(p, v) }

// LoadAcquire32 loads the 32-bit word at p with acquire semantics.
func LoadAcquire32(p *uint32) uint32 { return atomic.LoadUint32(p) }

// Word64 and Word32 view b[off:] as a word. The caller has checked bounds
// and alignment (region memory is aligned, fields are at natural offsets).
func Word64(b []byte, off int) *uint64 { return (*uint64)(unsafe.Pointer(&b[off])) }

// Word32 views b[off:] as a 32-bit word; see Word64.
func Word32(b []byte, off int) *uint32 { return (*uint32)(unsafe.Pointer(&b[off])) }

// LittleEndian reports whether this host stores words little-endian, as
// every shared layout requires.
var LittleEndian = func() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}()
