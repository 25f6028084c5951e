package barrier

import (
	"sync/atomic"
	"unsafe"
)

// The host side's memory-order rule, written once for this package. It is
// the link queue's rule (p2pqueue/order.go, whose helpers are unexported):
// every word has exactly one writer; a participant arrives with a release
// store of its own word after the plain writes the barrier covers, and a
// waiter observes each word with an acquire load before touching what it
// covers. Go's sync/atomic operations are sequentially consistent, which is
// at least acquire/release. No read-modify-write is ever used on barrier
// memory: it may sit across PCIe, where atomics are not atomic on many
// platforms, and be written by GPUs with st.release.sys (ra_barrier.cuh).

// arrive stores v into the word at p with release semantics.
func arrive(p *uint64, v uint64) { atomic.StoreUint64(p, v) }

// observe loads the word at p with acquire semantics.
func observe(p *uint64) uint64 { return atomic.LoadUint64(p) }

func publish32(p *uint32, v uint32) { atomic.StoreUint32(p, v) }
func observe32(p *uint32) uint32    { return atomic.LoadUint32(p) }

// word64 and word32 point into region memory. The caller has checked bounds
// and RegionAlign alignment, so every field offset is naturally aligned.
func word64(b []byte, off int) *uint64 { return (*uint64)(unsafe.Pointer(&b[off])) }
func word32(b []byte, off int) *uint32 { return (*uint32)(unsafe.Pointer(&b[off])) }

// littleEndian reports whether this host stores words little-endian, as the
// layout requires.
var littleEndian = func() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}()
