package p2pqueue

import (
	"encoding/binary"
	"fmt"

	"github.com/ringactor/ringactor/internal/order"
)

// The flagged format (FormatFlagged, layout version 3, experimental).
//
// A slot of SlotSize bytes is SlotSize/8 words of 8 bytes. Word j holds
// bytes 4j … 4j+3 of the logical slot (the 32-byte slot header, then the
// payload) in its low half and the slot's lap flag in its high half, and is
// written with one 8-byte store: 8-byte stores are single-copy atomic in
// host memory, over PCIe and over NVLink, so a reader that sees the flag
// sees the 4 bytes stored with it. The flag of the slot for index seq is
// lapFlag(seq): odd, so never the 0 of fresh (or Init-cleared) memory, and
// different from the lap before's, which is what the slot holds until the
// producer rewrites it. The consumer polls the slot's first word instead of
// tail; the words of one slot may become visible in any order (PCIe), so a
// reader checks the flag of every word it uses.
//
// The Go producer writes a slot's other words first and its first word at
// Commit, so a written but uncommitted slot stays unpublished. It still
// stores tail (release, once per batch) and the Go consumer head (release,
// once per batch): observers (Len, Stats, Queued) and the space check read
// them; nothing waits on tail.

// lapFlag is the flag of the slot for index seq.
func (l *Link) lapFlag(seq uint64) uint32 { return uint32(seq>>l.shift)<<1 | 1 }

// word returns word j of the slot for index seq.
func (l *Link) word(seq uint64, j int) *uint64 {
	return order.Word64(l.slots, int(seq&l.mask)*int(l.cfg.SlotSize)+8*j)
}

// flagState says what a word read from the slot for seq holds: 1 the
// expected lap's data, 0 not yet written (fresh memory's 0, or an earlier
// lap's flag: the lap before's, or an older one's where the messages since
// were shorter and left the word as it was), -1 a flag no correct producer
// writes there (even, or a lap ahead).
func (l *Link) flagState(seq uint64, w uint64) int {
	return flagState(l.lapFlag(seq), uint32(w>>32))
}

// flagState compares a word's flag f with want, the slot's lap flag; laps
// count modulo 2^31, and a flag up to 2^30 laps behind is an older lap's.
func flagState(want, f uint32) int {
	switch back := (want - f) >> 1; {
	case f == want:
		return 1
	case f == 0, f&1 == 1 && back < 1<<30:
		return 0
	}
	return -1
}

// gatherWords copies words [from, from+len(dst)/4) of the slot for seq into
// dst (4 bytes each; len(dst) a multiple of 4) and reports 1 if every one
// carried the expected flag, else the first other state (0 or -1).
func (l *Link) gatherWords(seq uint64, from int, dst []byte) int {
	for j := 0; 4*j < len(dst); j++ {
		w := order.LoadAcquire64(l.word(seq, from+j))
		if st := l.flagState(seq, w); st != 1 {
			return st
		}
		binary.LittleEndian.PutUint32(dst[4*j:], uint32(w))
	}
	return 1
}

// gatherHeader copies the slot header of the slot for seq into s (32
// bytes) for an observer, whatever its words' flags.
func (l *Link) gatherHeader(seq uint64, s []byte) {
	for j := range SlotHeaderSize / 4 {
		binary.LittleEndian.PutUint32(s[4*j:], uint32(order.LoadAcquire64(l.word(seq, j))))
	}
}

// encodeFlagged writes h and payload (which fits) into the slot for seq,
// every word but the first, and returns the first word for the caller to
// store last: that store publishes the slot.
func (l *Link) encodeFlagged(seq uint64, h *Header, payload []byte) uint64 {
	var hb [SlotHeaderSize]byte
	writeHeader(hb[:], h, len(payload))
	flag := uint64(l.lapFlag(seq)) << 32
	for j := 1; j < SlotHeaderSize/4; j++ {
		order.StoreRelease64(l.word(seq, j), flag|uint64(binary.LittleEndian.Uint32(hb[4*j:])))
	}
	j := SlotHeaderSize / 4
	for len(payload) >= 4 {
		order.StoreRelease64(l.word(seq, j), flag|uint64(binary.LittleEndian.Uint32(payload)))
		payload = payload[4:]
		j++
	}
	if len(payload) > 0 {
		var last [4]byte
		copy(last[:], payload)
		order.StoreRelease64(l.word(seq, j), flag|uint64(binary.LittleEndian.Uint32(last[:])))
	}
	return flag | uint64(binary.LittleEndian.Uint32(hb[:]))
}

// flaggedSlot is a consumer's copy of one peeked flagged slot.
type flaggedSlot struct {
	buf []byte // slot header and payload, gathered
	bad bool   // the length field points past the slot: buf holds the header only
}

// gather copies the slot for seq into fs once all its words carry the
// expected flag. It returns 1 when the slot is there, 0 when (part of) it
// is not yet written, and an error wrapping ErrCorrupt for a flag no
// correct producer writes.
func (c *Consumer) gather(seq uint64, fs *flaggedSlot) (int, error) {
	l := c.l
	if cap(fs.buf) < SlotHeaderSize {
		fs.buf = make([]byte, SlotHeaderSize, 2*SlotHeaderSize)
	}
	fs.buf, fs.bad = fs.buf[:SlotHeaderSize], false
	st := l.gatherWords(seq, 0, fs.buf)
	if st == 1 {
		n := int(binary.LittleEndian.Uint32(fs.buf[SlotOffLen:]))
		if n > l.cfg.PayloadCap() {
			fs.bad = true
			return 1, nil
		}
		fs.buf = append(fs.buf, make([]byte, (n+3)&^3)...)
		st = l.gatherWords(seq, SlotHeaderSize/4, fs.buf[SlotHeaderSize:])
		fs.buf = fs.buf[:SlotHeaderSize+n]
	}
	if st < 0 {
		return 0, fmt.Errorf("%w: %s: slot %d holds a word whose flag is no lap's (want %#x)",
			ErrCorrupt, l.cfg.LinkID.named(), seq, l.lapFlag(seq))
	}
	return st, nil
}

// peekFlagged is Peek for a flagged link: it gathers up to n published
// slots, stopping at the first one not (wholly) written yet.
func (c *Consumer) peekFlagged(n int) (int, error) {
	n = min(n, c.l.Cap())
	if len(c.fs) < n {
		c.fs = append(c.fs, make([]flaggedSlot, n-len(c.fs))...)
	}
	k := 0
	for ; k < n; k++ {
		st, err := c.gather(c.head+uint64(k), &c.fs[k])
		if err != nil {
			if k == 0 {
				return 0, err
			}
			break // the slots before it are good: the error comes with the next Peek
		}
		if st == 0 {
			break
		}
	}
	return k, nil
}

// readFlagged is Read for a flagged link: the peeked slot's copy.
func (c *Consumer) readFlagged(i int, idx uint64) (Header, []byte, error) {
	fs := &c.fs[i]
	var h Header
	payload, ok := readSlot(fs.buf, &h)
	if !ok || fs.bad {
		return h, nil, fmt.Errorf("%s slot %d: %w: message %d claims %d payload bytes, the slot holds %d",
			c.l.cfg.LinkID.named(), idx, ErrCorruptSlot, h.ID, binary.LittleEndian.Uint32(fs.buf[SlotOffLen:]), c.l.cfg.PayloadCap())
	}
	return h, payload, nil
}

// flaggedBytes is the payload bytes of the first k peeked slots, as
// Release counts them (a corrupt slot counts its slot's payload room).
func (c *Consumer) flaggedBytes(k int) uint64 {
	var bytes uint64
	for i := range k {
		if c.fs[i].bad {
			bytes += uint64(c.l.cfg.PayloadCap())
			continue
		}
		bytes += uint64(len(c.fs[i].buf) - SlotHeaderSize)
	}
	return bytes
}

// firstReady reports whether the slot at head is published: a flagged
// consumer's re-check before it parks.
func (c *Consumer) firstReady() bool {
	return c.l.flagState(c.head, order.LoadAcquire64(c.l.word(c.head, 0))) == 1
}

// stageFlagged returns the staging buffer for reserved slot i, which
// Slot hands out on a flagged link (its slots hold no contiguous bytes).
func (p *Producer) stageFlagged(i int) []byte {
	for len(p.stage) <= i {
		p.stage = append(p.stage, nil)
	}
	if n := p.l.cfg.PayloadCap(); len(p.stage[i]) != n {
		p.stage[i] = make([]byte, n)
	}
	return p.stage[i]
}

// writeFlagged encodes reserved slot i (the i-th written) and keeps its
// first word for Commit.
func (p *Producer) writeFlagged(i int, h *Header, payload []byte) {
	p.first = append(p.first[:i], p.l.encodeFlagged(p.tail+uint64(i), h, payload))
}

// commitFlagged publishes the first k written slots: their first words,
// in order.
func (p *Producer) commitFlagged(k int) {
	for i, w := range p.first[:k] {
		order.StoreRelease64(p.l.word(p.tail+uint64(i), 0), w)
	}
	p.first = p.first[:0]
}
