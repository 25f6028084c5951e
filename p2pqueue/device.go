package p2pqueue

import (
	"fmt"
	"sync"

	"github.com/ringactor/ringactor/internal/order"
)

// DeviceAccess copies bytes between the host and memory it cannot map, such
// as GPU device memory. The backend that allocates a DeviceMemory region
// supplies it; the queue uses it only to format the header and to read the
// index lines for observers, never on the message path.
type DeviceAccess interface {
	// CopyIn writes p into the region at off.
	CopyIn(off int, p []byte) error
	// CopyOut reads len(p) bytes of the region at off into p.
	CopyOut(p []byte, off int) error
}

// deviceLink is the host's view of a queue in device memory: a shadow of
// its header, refreshed from the device when an observer asks.
type deviceLink struct {
	access DeviceAccess
	mu     sync.Mutex // one refresh at a time; readers of the shadow hold it
	err    error      // the last refresh's error, for Stats readers
}

// initDevice formats a queue in device memory: the header is built in a
// host shadow by the same code as for host memory, then copied in with the
// magic last, so a device loop attaching early never sees half a header.
func initDevice(r Region, cfg Config) (*Link, error) {
	if !order.LittleEndian {
		return nil, ErrBigEndian
	}
	need, err := cfg.RegionSize()
	if err != nil {
		return nil, err
	}
	if r.Size < need {
		return nil, fmt.Errorf("%w: %d bytes of %s memory; %d slots of %d bytes need %d", ErrRegionTooSmall, r.Size, r.Kind, cfg.Capacity, cfg.SlotSize, need)
	}
	if r.DeviceAddr%RegionAlign != 0 {
		return nil, fmt.Errorf("%w: device address %#x is not %d-byte aligned", ErrMisaligned, r.DeviceAddr, RegionAlign)
	}
	shadow, err := NewAlignedRegion(OffSlots)
	if err != nil {
		return nil, err
	}
	l := newLinkOver(r, shadow.Bytes, cfg)
	l.dev = &deviceLink{access: r.Access}
	format(l, cfg, 0)
	if err := r.Access.CopyIn(0, make([]byte, 4)); err != nil { // invalidate first
		return nil, fmt.Errorf("p2pqueue: formatting %s in %s memory on device %d: %w", cfg.LinkID.named(), r.Kind, r.Device, err)
	}
	if err := r.Access.CopyIn(4, shadow.Bytes[4:OffSlots]); err != nil {
		return nil, fmt.Errorf("p2pqueue: formatting %s in %s memory on device %d: %w", cfg.LinkID.named(), r.Kind, r.Device, err)
	}
	if cfg.Format == FormatFlagged { // device memory is not cleared: no word may carry a flag a reader expects
		zero := make([]byte, min(need-OffSlots, 1<<20))
		for off := OffSlots; off < need; off += len(zero) {
			if err := r.Access.CopyIn(off, zero[:min(len(zero), need-off)]); err != nil {
				return nil, fmt.Errorf("p2pqueue: clearing the slots of %s in %s memory on device %d: %w", cfg.LinkID.named(), r.Kind, r.Device, err)
			}
		}
	}
	if err := r.Access.CopyIn(OffMagic, shadow.Bytes[OffMagic:OffMagic+4]); err != nil {
		return nil, fmt.Errorf("p2pqueue: formatting %s in %s memory on device %d: %w", cfg.LinkID.named(), r.Kind, r.Device, err)
	}
	return l, nil
}

// refresh copies the producer and consumer lines from the device into the
// shadow and returns the unlock to defer. A failed copy leaves the last
// reading in place: observers see stale counters, never garbage.
func (d *deviceLink) refresh(l *Link) func() {
	d.mu.Lock()
	buf := make([]byte, OffSlots-OffProducerLine)
	if d.err = d.access.CopyOut(buf, OffProducerLine); d.err == nil {
		copyWords(l.hdr[OffProducerLine:OffSlots], buf)
	}
	return d.mu.Unlock
}

// copyWords stores buf into the shadow word by word through the same
// atomics the readers use, so a reader never sees a torn word.
func copyWords(dst, buf []byte) {
	for off := 0; off+8 <= len(buf); off += 8 {
		v := uint64(buf[off]) | uint64(buf[off+1])<<8 | uint64(buf[off+2])<<16 | uint64(buf[off+3])<<24 |
			uint64(buf[off+4])<<32 | uint64(buf[off+5])<<40 | uint64(buf[off+6])<<48 | uint64(buf[off+7])<<56
		order.StoreSeqCst64(order.Word64(dst, off), v)
	}
}

// hostUse is the error for moving messages on a device link from the host.
func (d *deviceLink) hostUse(l *Link, what string) error {
	return fmt.Errorf("%w: the host cannot %s %s: it is in %s memory on device %d, where a device loop owns both ends; place links the host touches in mapped pinned memory",
		ErrNotHostVisible, what, l.cfg.LinkID.named(), l.r.Kind, l.r.Device)
}
