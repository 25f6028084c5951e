package p2pqueue

import (
	"fmt"
	"unsafe"
)

// MemoryKind says where a region's memory lives and so who may touch it.
type MemoryKind uint8

const (
	// HostMemory is ordinary Go memory: the sim backend and tests.
	HostMemory MemoryKind = iota
	// DeviceMemory lives on one GPU; the host cannot read it directly.
	DeviceMemory
	// MappedPinnedMemory is page-locked host memory mapped into one GPU's
	// address space: host ingress and egress links, trace rings.
	MappedPinnedMemory
	// PortablePinnedMemory is page-locked host memory mapped into every GPU:
	// the host-staged link between two GPUs without peer access.
	PortablePinnedMemory
)

func (k MemoryKind) String() string {
	switch k {
	case HostMemory:
		return "host"
	case DeviceMemory:
		return "device"
	case MappedPinnedMemory:
		return "mapped-pinned"
	case PortablePinnedMemory:
		return "portable-pinned"
	}
	return fmt.Sprintf("MemoryKind(%d)", uint8(k))
}

// HostVisible reports whether the host can read and write memory of kind k
// through ordinary loads and stores.
func (k MemoryKind) HostVisible() bool { return k != DeviceMemory }

// Region is a span of memory a queue lives in. Bytes is the host's view of it
// (nil for device memory the host cannot map); DeviceAddr is its address as
// the owning device sees it (0 for plain host memory).
type Region struct {
	Bytes      []byte
	DeviceAddr uint64
	Kind       MemoryKind
	// Device is the id of the device whose memory this is, or -1 for host memory.
	Device int
	// Size is the region's length where Bytes is nil (device memory).
	Size int
	// Access copies to and from memory the host cannot map; the backend
	// that allocated a DeviceMemory region sets it (see Init).
	Access DeviceAccess
}

// Len is the region's size in bytes.
func (r Region) Len() int {
	if r.Bytes != nil {
		return len(r.Bytes)
	}
	return r.Size
}

// NewHostRegion allocates a zeroed region of n bytes of Go memory whose base
// is RegionAlign-aligned, as the queue's atomic words and cache-line split
// need. The memory must not be handed to a device: the GC may move nothing
// here, but it is not page-locked.
func NewHostRegion(n int) (Region, error) {
	if n < OffSlots {
		return Region{}, fmt.Errorf("%w: %d bytes; a queue needs at least %d", ErrRegionTooSmall, n, OffSlots)
	}
	return NewAlignedRegion(n)
}

// NewAlignedRegion is NewHostRegion for memory that is not a queue (a
// kernel's control block): any positive size.
func NewAlignedRegion(n int) (Region, error) {
	if n <= 0 {
		return Region{}, fmt.Errorf("%w: %d bytes", ErrRegionTooSmall, n)
	}
	buf := make([]byte, n+RegionAlign)
	skip := (RegionAlign - int(uintptr(unsafe.Pointer(&buf[0]))%RegionAlign)) % RegionAlign
	return Region{Bytes: buf[skip : skip+n : skip+n], Kind: HostMemory, Device: -1}, nil
}

// NewHostQueue allocates a host region sized for cfg and initialises a queue
// in it: the usual way to make a link between two goroutines.
func NewHostQueue(cfg Config) (*Link, error) {
	n, err := cfg.RegionSize()
	if err != nil {
		return nil, err
	}
	r, err := NewHostRegion(n)
	if err != nil {
		return nil, err
	}
	return Init(r, cfg)
}

func (r Region) check() error {
	if !r.Kind.HostVisible() || r.Bytes == nil {
		return fmt.Errorf("%w: %s memory on device %d has no host mapping; initialise it from the device or use mapped pinned memory",
			ErrNotHostVisible, r.Kind, r.Device)
	}
	if len(r.Bytes) < OffSlots {
		return fmt.Errorf("%w: %d bytes; a queue needs at least %d", ErrRegionTooSmall, len(r.Bytes), OffSlots)
	}
	if p := uintptr(unsafe.Pointer(&r.Bytes[0])); p%RegionAlign != 0 {
		return fmt.Errorf("%w: base %#x is not %d-byte aligned; allocate with NewHostRegion",
			ErrMisaligned, p, RegionAlign)
	}
	return nil
}
