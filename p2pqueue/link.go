package p2pqueue

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"sync/atomic"

	"github.com/ringactor/ringactor/internal/order"
	"github.com/ringactor/ringactor/internal/testhook"
	"github.com/ringactor/ringactor/internal/wait"
)

// Link is a handle on a queue in a region. Any number of goroutines may read
// its observer methods (Len, Stats, Closed); the one producer and the one
// consumer each work through a handle claimed once with Producer and Consumer.
type Link struct {
	r     Region
	cfg   Config
	mask  uint64
	shift uint   // log2(capacity): a slot's lap is its index >> shift
	hdr   []byte // the header: the region's, or a device link's shadow
	slots []byte

	tail, head *uint64
	closed     *uint32
	parked     *uint32

	bytesIn, fullWaits, publishes  *uint64
	bytesOut, emptyPolls, releases *uint64

	producerTaken, consumerTaken atomic.Bool
	bell                         atomic.Pointer[Doorbell]

	// dev is set for a queue in device memory: the index words above then
	// point into a host shadow of its header, refreshed under devMu.
	dev *deviceLink
}

// Init formats r as an empty, open queue of cfg and returns a handle on it.
// The magic is written last, so an Attach racing with Init never accepts a
// half-written header.
//
// A region the host cannot map (device memory) is formatted through its
// Access; the returned Link can observe it (Len, Stats, Closed) and hand out
// claims for device loops, but its host Producer and Consumer cannot move
// messages.
func Init(r Region, cfg Config) (*Link, error) {
	if r.Bytes == nil && r.Access != nil {
		return initDevice(r, cfg)
	}
	return initAt(r, cfg, 0)
}

// initAt starts both indices at start; tests use it to wrap them.
func initAt(r Region, cfg Config, start uint64) (*Link, error) {
	if !order.LittleEndian {
		return nil, ErrBigEndian
	}
	if err := r.check(); err != nil {
		return nil, err
	}
	need, err := cfg.RegionSize()
	if err != nil {
		return nil, err
	}
	if len(r.Bytes) < need {
		return nil, fmt.Errorf("%w: %d bytes; %d slots of %d bytes need %d", ErrRegionTooSmall, len(r.Bytes), cfg.Capacity, cfg.SlotSize, need)
	}
	b := r.Bytes
	order.StoreRelease32(order.Word32(b, OffMagic), 0) // invalidate first: a reformat is not a live queue
	if cfg.Format == FormatFlagged {
		clear(b[OffSlots:need]) // no word may carry a flag a reader expects
	}
	l := newLink(r, cfg)
	format(l, cfg, start)
	return l, nil
}

// format writes an empty queue's header through l's words, magic last.
func format(l *Link, cfg Config, start uint64) {
	b := l.hdr
	clear(b[4:OffSlots])
	binary.LittleEndian.PutUint16(b[OffVersion:], cfg.Format.version())
	binary.LittleEndian.PutUint32(b[OffCapacity:], cfg.Capacity)
	binary.LittleEndian.PutUint32(b[OffSlotSize:], cfg.SlotSize)
	binary.LittleEndian.PutUint64(b[OffLinkID:], uint64(cfg.LinkID))
	order.StoreRelease64(l.tail, start)
	order.StoreRelease64(l.head, start)
	order.StoreRelease32(order.Word32(b, OffMagic), Magic)
}

// Attach validates the queue in r and returns a handle on it. It never
// trusts the memory: every field is checked and anything wrong is an error
// naming the field, never a panic.
func Attach(r Region) (*Link, error) {
	if !order.LittleEndian {
		return nil, ErrBigEndian
	}
	if err := r.check(); err != nil {
		return nil, err
	}
	b := r.Bytes
	if m := order.LoadAcquire32(order.Word32(b, OffMagic)); m != Magic {
		return nil, fmt.Errorf("%w: %#08x, want %#08x; the region was not initialised with p2pqueue.Init", ErrBadMagic, m, Magic)
	}
	var f Format
	switch v := binary.LittleEndian.Uint16(b[OffVersion:]); v {
	case Version:
		f = FormatIndexed
	case VersionFlagged:
		f = FormatFlagged
	default:
		return nil, fmt.Errorf("%w: %d, this build reads versions %d and %d; build producer and consumer from the same release", ErrBadVersion, v, Version, VersionFlagged)
	}
	cfg := Config{
		Format:   f,
		Capacity: binary.LittleEndian.Uint32(b[OffCapacity:]),
		SlotSize: binary.LittleEndian.Uint32(b[OffSlotSize:]),
		LinkID:   LinkID(binary.LittleEndian.Uint64(b[OffLinkID:])),
	}
	need, err := cfg.RegionSize()
	if err != nil {
		return nil, err
	}
	if len(r.Bytes) < need {
		return nil, fmt.Errorf("%w: %d bytes; the header says %d slots of %d bytes, which need %d", ErrRegionTooSmall, len(r.Bytes), cfg.Capacity, cfg.SlotSize, need)
	}
	l := newLink(r, cfg)
	// Read head before tail: head only grows towards tail, so tail >= head
	// for any correct pair of readings.
	// Read head, tail, head again: head only grows towards tail, so a
	// reading with head unchanged across the tail read is consistent even
	// while both sides run. Retry a few times before calling it corrupt.
	var h, t uint64
	for try := 0; ; try++ {
		h = order.LoadAcquire64(l.head)
		t = order.LoadAcquire64(l.tail)
		if t-h <= uint64(cfg.Capacity) {
			break
		}
		if order.LoadAcquire64(l.head) == h || try == 8 {
			return nil, fmt.Errorf("%w: tail %d and head %d are %d slots apart in a queue of %d", ErrCorrupt, t, h, t-h, cfg.Capacity)
		}
	}
	if c := order.LoadAcquire32(l.closed); c > 1 {
		return nil, fmt.Errorf("%w: closed flag is %d, want 0 or 1", ErrCorrupt, c)
	}
	return l, nil
}

func newLink(r Region, cfg Config) *Link { return newLinkOver(r, r.Bytes, cfg) }

// newLinkOver makes a handle whose header words are in b: the region itself,
// or a host shadow of a device region's header (then there are no slots).
func newLinkOver(r Region, b []byte, cfg Config) *Link {
	size := OffSlots + int(cfg.Capacity)*int(cfg.SlotSize)
	var slots []byte
	if len(b) >= size {
		slots = b[OffSlots:size:size]
	}
	return &Link{
		r:          r,
		cfg:        cfg,
		mask:       uint64(cfg.Capacity) - 1,
		shift:      uint(bits.TrailingZeros32(cfg.Capacity)),
		hdr:        b[:OffSlots:OffSlots],
		slots:      slots,
		tail:       order.Word64(b, OffTail),
		head:       order.Word64(b, OffHead),
		closed:     order.Word32(b, OffClosed),
		parked:     order.Word32(b, OffParked),
		bytesIn:    order.Word64(b, OffBytesIn),
		fullWaits:  order.Word64(b, OffFullWaits),
		publishes:  order.Word64(b, OffPublishes),
		bytesOut:   order.Word64(b, OffBytesOut),
		emptyPolls: order.Word64(b, OffEmptyPolls),
		releases:   order.Word64(b, OffReleases),
	}
}

// slot returns the bytes of the slot for index i.
func (l *Link) slot(i uint64) []byte {
	s := int(l.cfg.SlotSize)
	off := int(i&l.mask) * s
	return l.slots[off : off+s : off+s]
}

// Config returns the link's capacity, slot size, id and format.
func (l *Link) Config() Config { return l.cfg }

// Format returns the link's queue layout, as Init was given it or Attach
// read it from the header's version.
func (l *Link) Format() Format { return l.cfg.Format }

// Region returns the memory the link lives in.
func (l *Link) Region() Region { return l.r }

// Cap is the number of slots.
func (l *Link) Cap() int { return int(l.cfg.Capacity) }

// Len is the number of published messages not yet consumed, as an observer
// sees it; it is exact only when neither side is running.
func (l *Link) Len() int {
	if l.dev != nil {
		defer l.dev.refresh(l)()
	}
	h := order.LoadAcquire64(l.head)
	t := order.LoadAcquire64(l.tail)
	return clampLen(t-h, l.cfg.Capacity)
}

func clampLen(n uint64, capacity uint32) int {
	if n > uint64(capacity) { // a reading taken while both sides moved
		return int(capacity)
	}
	return int(n)
}

// Closed reports whether the producer has closed the link (messages may
// still be queued).
func (l *Link) Closed() bool {
	if l.dev != nil {
		defer l.dev.refresh(l)()
	}
	return l.closedFlag()
}

func (l *Link) closedFlag() bool { return order.LoadAcquire32(l.closed) == 1 }

// SetDoorbell gives the link a doorbell that the producer rings when the
// consumer has parked. Both sides must work through this Link, in this
// process. It may be set before or after the sides are claimed; a publish
// racing with SetDoorbell may not ring, and the doorbell's fallback re-check
// bounds that wait. Several links may share one doorbell, so one consumer
// can park on all its in-links (ParkAll).
func (l *Link) SetDoorbell(d *Doorbell) { l.bell.Store(d) }

// Doorbell returns the link's doorbell, or nil.
func (l *Link) Doorbell() *Doorbell { return l.bell.Load() }

// Stats is a snapshot of a link's counters. Published and Consumed are the
// raw 64-bit indices: they wrap together, and Published-Consumed is the
// number in flight.
type Stats struct {
	Published, Consumed uint64 // tail and head
	InFlight            int
	Closed              bool
	BytesIn, BytesOut   uint64
	FullWaits           uint64 // producer found the queue full
	EmptyPolls          uint64 // consumer found the queue empty
	Publishes, Releases uint64 // index stores: one per batch
	ConsumerParked      bool
}

// Stats reads the link's counters.
func (l *Link) Stats() Stats {
	if l.dev != nil {
		defer l.dev.refresh(l)()
	}
	h := order.LoadAcquire64(l.head)
	t := order.LoadAcquire64(l.tail)
	return Stats{
		Published:      t,
		Consumed:       h,
		InFlight:       clampLen(t-h, l.cfg.Capacity),
		Closed:         l.closedFlag(),
		BytesIn:        order.LoadAcquire64(l.bytesIn),
		BytesOut:       order.LoadAcquire64(l.bytesOut),
		FullWaits:      order.LoadAcquire64(l.fullWaits),
		EmptyPolls:     order.LoadAcquire64(l.emptyPolls),
		Publishes:      order.LoadAcquire64(l.publishes),
		Releases:       order.LoadAcquire64(l.releases),
		ConsumerParked: order.LoadAcquire32(l.parked) == 1,
	}
}

// Producer claims the link's producer side. A link has one producer: a
// second claim on the same Link fails with ErrClaimed. The claim is per Link
// handle; nothing stops another process or another Attach of the same
// region from producing too, so the owner of a region hands out one Link.
func (l *Link) Producer() (*Producer, error) {
	if !l.producerTaken.CompareAndSwap(false, true) {
		return nil, fmt.Errorf("%w: %s already has a producer; fan-in needs one link per producer", ErrClaimed, l.cfg.LinkID.named())
	}
	if l.dev != nil && !testhook.SkipClaimRefresh.Load() {
		defer l.dev.refresh(l)()
	}
	t := order.LoadAcquire64(l.tail)
	h := order.LoadAcquire64(l.head)
	if t-h > uint64(l.cfg.Capacity) {
		l.producerTaken.Store(false)
		return nil, fmt.Errorf("%w: %s: tail %d and head %d are %d slots apart in a queue of %d",
			ErrCorrupt, l.cfg.LinkID.named(), t, h, t-h, l.cfg.Capacity)
	}
	return &Producer{
		l: l, tail: t, headCache: h, closed: l.closedFlag(), w: wait.Waiter{P: linkWait},
		bytesIn: order.LoadAcquire64(l.bytesIn), fullWaits: order.LoadAcquire64(l.fullWaits), publishes: order.LoadAcquire64(l.publishes),
	}, nil
}

// Consumer claims the link's consumer side. A link has one consumer: a
// second claim on the same Link fails with ErrClaimed.
func (l *Link) Consumer() (*Consumer, error) {
	if !l.consumerTaken.CompareAndSwap(false, true) {
		return nil, fmt.Errorf("%w: %s already has a consumer; fan-out needs one link per consumer", ErrClaimed, l.cfg.LinkID.named())
	}
	if l.dev != nil && !testhook.SkipClaimRefresh.Load() {
		defer l.dev.refresh(l)()
	}
	h := order.LoadAcquire64(l.head)
	return &Consumer{
		l: l, head: h, tailCache: h, w: wait.Waiter{P: linkWait},
		bytesOut: order.LoadAcquire64(l.bytesOut), emptyPolls: order.LoadAcquire64(l.emptyPolls), releases: order.LoadAcquire64(l.releases),
	}, nil
}

// Detach gives up the producer claim, so the link can be claimed again: for
// an owner whose setup failed after claiming. The handle must not be used
// afterwards.
func (p *Producer) Detach() { p.l.producerTaken.Store(false) }

// Detach gives up the consumer claim, as Producer.Detach does.
func (c *Consumer) Detach() { c.l.consumerTaken.Store(false) }

// Queued returns the headers of the messages published and not yet
// consumed, oldest first, without consuming them. It is an observer's
// reading: exact only while neither side moves, which is when the host
// takes over the account of a consumer that stopped (a hung stage whose
// producers have ended). Slots that cannot be read are returned with what
// could be read of their header. Links in device memory are not host
// visible: it returns ErrNotHostVisible for them.
func (l *Link) Queued() ([]Header, error) {
	if l.dev != nil {
		return nil, l.dev.hostUse(l, "read the queued headers of")
	}
	h := order.LoadAcquire64(l.head)
	n := uint64(clampLen(order.LoadAcquire64(l.tail)-h, l.cfg.Capacity))
	out := make([]Header, 0, n)
	for i := range n {
		var hd Header
		if l.cfg.Format == FormatFlagged {
			var s [SlotHeaderSize]byte
			l.gatherHeader(h+i, s[:])
			readSlot(s[:], &hd)
			out = append(out, hd)
			continue
		}
		readSlot(l.slot(h+i), &hd)
		out = append(out, hd)
	}
	return out, nil
}
