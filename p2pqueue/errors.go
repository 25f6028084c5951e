package p2pqueue

import "errors"

// Errors returned by the queue. They are wrapped with detail; test for them
// with errors.Is.
var (
	// ErrFull: the queue has no free slot (TryEnqueue only).
	ErrFull = errors.New("p2pqueue: queue full")
	// ErrEmpty: the queue has no message (TryDequeue only).
	ErrEmpty = errors.New("p2pqueue: queue empty")
	// ErrClosed: the producer closed the link; for the consumer, only once drained.
	ErrClosed = errors.New("p2pqueue: link closed")
	// ErrTooLarge: the payload does not fit in a slot.
	ErrTooLarge = errors.New("p2pqueue: payload larger than the slot")

	// ErrBadMagic: the region does not hold a ringactor queue.
	ErrBadMagic = errors.New("p2pqueue: bad magic")
	// ErrBadVersion: the region holds a queue of another layout version.
	ErrBadVersion = errors.New("p2pqueue: unsupported layout version")
	// ErrBadFormat: a Config names a queue format this build does not know.
	ErrBadFormat = errors.New("p2pqueue: unknown queue format")
	// ErrBadCapacity: the capacity is not a power of two within bounds.
	ErrBadCapacity = errors.New("p2pqueue: bad capacity")
	// ErrBadSlotSize: the slot size is not a multiple of SlotAlign within bounds.
	ErrBadSlotSize = errors.New("p2pqueue: bad slot size")
	// ErrRegionTooSmall: the region is shorter than its queue needs.
	ErrRegionTooSmall = errors.New("p2pqueue: region too small")
	// ErrMisaligned: the region's base is not RegionAlign-aligned.
	ErrMisaligned = errors.New("p2pqueue: region misaligned")
	// ErrNotHostVisible: the host cannot touch the region's memory.
	ErrNotHostVisible = errors.New("p2pqueue: region not host-visible")
	// ErrCorrupt: the queue's indices or flags hold values no correct peer writes.
	ErrCorrupt = errors.New("p2pqueue: queue memory corrupt")
	// ErrCorruptSlot: a slot header holds values no correct producer writes.
	ErrCorruptSlot = errors.New("p2pqueue: slot corrupt")
	// ErrClaimed: the link's producer or consumer handle was already taken.
	ErrClaimed = errors.New("p2pqueue: side already claimed")
	// ErrMisuse: batch calls out of order (Write before Reserve, Commit of
	// more than was written, Read or Release past the peek).
	ErrMisuse = errors.New("p2pqueue: batch call out of order")
	// ErrBigEndian: the queue layout is little-endian and so must the host be.
	ErrBigEndian = errors.New("p2pqueue: big-endian host not supported")
)
