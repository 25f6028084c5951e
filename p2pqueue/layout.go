package p2pqueue

import "fmt"

// Layout of a link queue region. These constants are the single source of
// truth: `go generate ./kernels/...` writes them into the C header the CUDA
// kernels include, and a test fails when that header is stale. All fields are
// little-endian; every offset is from the start of the region.
const (
	// Magic identifies a ringactor queue ("RARQ" in memory order).
	Magic uint32 = 0x51524152
	// Version is the layout version of an indexed queue (FormatIndexed).
	// Attach reads it and VersionFlagged and refuses any other.
	Version uint16 = 2
	// VersionFlagged is the layout version of a flagged queue
	// (FormatFlagged, experimental): a lap flag in every 8-byte slot word.
	VersionFlagged uint16 = 3

	// RegionAlign is the alignment of a region's base address: one producer
	// or consumer line, so the two sides never share a cache line.
	RegionAlign = 128
	// LineSize is the size of the header, producer and consumer lines.
	LineSize = 128

	// Header line, written once by Init.
	OffMagic    = 0  // u32
	OffVersion  = 4  // u16
	OffCapacity = 8  // u32, slots, power of two
	OffSlotSize = 12 // u32, bytes including the slot header, multiple of SlotAlign
	OffLinkID   = 16 // u64

	// Producer line: written only by the producer.
	OffProducerLine = 128
	OffTail         = 128 // u64, slots published (wraps modulo 2^64)
	OffClosed       = 136 // u32, 1 once the producer has published its last slot
	OffBytesIn      = 144 // u64, payload bytes published
	OffFullWaits    = 152 // u64, times the producer found the queue full
	OffPublishes    = 160 // u64, release stores of tail (one per batch)

	// Consumer line: written only by the consumer.
	OffConsumerLine = 256
	OffHead         = 256 // u64, slots consumed (wraps modulo 2^64)
	OffBytesOut     = 272 // u64, payload bytes consumed
	OffEmptyPolls   = 280 // u64, times the consumer found the queue empty
	OffReleases     = 288 // u64, release stores of head (one per batch)
	// OffParked is 1 while the consumer is parked and wants a wake-up. It
	// has the line's second 64 bytes to itself: an in-process producer
	// reads it after every publish, and beside head it would pull the
	// consumer's hot cache line across cores each time (version 2 moved
	// it from 264).
	OffParked = 320 // u32

	// OffSlots is where slot 0 starts; slot k lives at
	// OffSlots + (k mod capacity) * slot size.
	OffSlots = 384

	// Slot header, at the start of every slot; the payload follows it.
	SlotHeaderSize  = 32
	SlotOffID       = 0  // u64, message id
	SlotOffType     = 8  // u32, type tag
	SlotOffLen      = 12 // u32, payload length in bytes
	SlotOffFlags    = 16 // u32, Flags
	SlotOffOrigin   = 20 // u32, origin stage
	SlotOffEnqueued = 24 // u64, enqueue timestamp in nanoseconds

	// Bounds that Init and Attach enforce.
	SlotAlign   = 64
	MinSlotSize = 64
	MaxSlotSize = 1 << 24
	MinCapacity = 2
	MaxCapacity = 1 << 30
)

// Flags of a slot header.
type Flags uint32

const (
	// FlagSampled marks a message that is traced through every stage.
	FlagSampled Flags = 1 << 0
	// FlagError marks a message a stage failed on; the payload holds the reason.
	FlagError Flags = 1 << 1
	// FlagControl marks a control message for the kernel rather than the stage.
	FlagControl Flags = 1 << 2
)

// Config describes a link queue to Init.
type Config struct {
	// Capacity is the number of slots: a power of two in [MinCapacity, MaxCapacity].
	Capacity uint32
	// SlotSize is the size of a slot in bytes, slot header included: a
	// multiple of SlotAlign in [MinSlotSize, MaxSlotSize].
	SlotSize uint32
	// LinkID names the link; it is stored in the header for diagnostics
	// and decoded by errors (NewLinkID).
	LinkID LinkID
	// Format is the queue layout: FormatIndexed (the zero value, version
	// 2) or FormatFlagged (version 3, experimental), whose slots carry
	// half their size in message bytes (PayloadCap).
	Format Format
}

// Format is a queue's layout: how a consumer learns that a slot is
// published.
type Format uint8

const (
	// FormatIndexed (layout version 2, the default): the producer
	// publishes a batch with one release store of tail; the consumer
	// acquires tail, then reads the slots.
	FormatIndexed Format = iota
	// FormatFlagged (layout version 3) is EXPERIMENTAL: every 8-byte word
	// of a slot holds 4 message bytes and a 4-byte lap flag, written with
	// one 8-byte store, so one read returns data and validity together
	// (NCCL's LL protocol). The consumer polls the next slot instead of
	// tail, the producer needs no fence, and a slot of SlotSize bytes
	// carries SlotSize/2 bytes of slot header and payload. Device loops
	// do not read or write it yet: ringkernel/cuda refuses such links.
	FormatFlagged
)

// String names the format.
func (f Format) String() string {
	switch f {
	case FormatIndexed:
		return "indexed"
	case FormatFlagged:
		return "flagged"
	}
	return fmt.Sprintf("Format(%d)", uint8(f))
}

// version is the layout version of format f.
func (f Format) version() uint16 {
	if f == FormatFlagged {
		return VersionFlagged
	}
	return Version
}

// ConfigForFormat is ConfigFor for a queue of format f: a flagged slot
// needs twice the bytes for the same payload.
func ConfigForFormat(capacity uint32, payloadBytes int, f Format) Config {
	if f != FormatFlagged {
		c := ConfigFor(capacity, payloadBytes)
		c.Format = f
		return c
	}
	s := 2 * (uint64(SlotHeaderSize) + uint64(max(payloadBytes, 0)))
	s = (s + SlotAlign - 1) / SlotAlign * SlotAlign
	if s > MaxSlotSize {
		s = MaxSlotSize + SlotAlign // invalid on purpose: Validate names the problem
	}
	return Config{Capacity: capacity, SlotSize: uint32(s), Format: f}
}

// ConfigFor returns the smallest Config whose slots hold payloads of
// payloadBytes, with the given capacity.
func ConfigFor(capacity uint32, payloadBytes int) Config {
	s := uint64(SlotHeaderSize) + uint64(max(payloadBytes, 0))
	s = (s + SlotAlign - 1) / SlotAlign * SlotAlign
	if s > MaxSlotSize {
		s = MaxSlotSize + SlotAlign // invalid on purpose: Validate names the problem
	}
	return Config{Capacity: capacity, SlotSize: uint32(s)}
}

// PayloadCap is the largest payload one slot holds: the slot size less
// the slot header, or for FormatFlagged half the slot size less it.
func (c Config) PayloadCap() int {
	if c.Format == FormatFlagged {
		return int(c.SlotSize)/2 - SlotHeaderSize
	}
	return int(c.SlotSize) - SlotHeaderSize
}

// Validate reports the first thing wrong with c, naming the fix.
func (c Config) Validate() error {
	if c.Capacity < MinCapacity || c.Capacity > MaxCapacity || c.Capacity&(c.Capacity-1) != 0 {
		return fmt.Errorf("%w: %d slots; use a power of two from %d to %d",
			ErrBadCapacity, c.Capacity, MinCapacity, MaxCapacity)
	}
	if c.SlotSize < MinSlotSize || c.SlotSize > MaxSlotSize || c.SlotSize%SlotAlign != 0 {
		return fmt.Errorf("%w: %d bytes; use a multiple of %d from %d to %d (the %d-byte slot header included)",
			ErrBadSlotSize, c.SlotSize, SlotAlign, MinSlotSize, MaxSlotSize, SlotHeaderSize)
	}
	if c.Format > FormatFlagged {
		return fmt.Errorf("%w: %s; use FormatIndexed or FormatFlagged", ErrBadFormat, c.Format)
	}
	return nil
}

// RegionSize is the number of bytes a region needs to hold a queue of c.
func (c Config) RegionSize() (int, error) {
	if err := c.Validate(); err != nil {
		return 0, err
	}
	n := uint64(OffSlots) + uint64(c.Capacity)*uint64(c.SlotSize)
	if n > uint64(maxInt) {
		return 0, fmt.Errorf("%w: %d slots of %d bytes need %d bytes, more than this platform addresses",
			ErrBadCapacity, c.Capacity, c.SlotSize, n)
	}
	return int(n), nil
}

const maxInt = int(^uint(0) >> 1)
