package p2pqueue

import (
	"encoding/binary"
	"fmt"
)

// Header is the fixed part of a message, stored at the start of its slot.
type Header struct {
	ID       uint64 // message id, unique per pipeline
	Type     uint32 // type tag, meaning given by the stage
	Flags    Flags
	Origin   uint32 // stage that produced the message
	Enqueued uint64 // enqueue timestamp in nanoseconds (set for sampled messages)
}

// Message is a header and a payload. Consumers copy payloads into the
// capacity of Payload, so reusing a Message does not allocate.
type Message struct {
	Header
	Payload []byte
}

// EncodeSlot writes h and payload into slot, which must be a whole slot.
func EncodeSlot(slot []byte, h Header, payload []byte) error {
	if len(slot) < SlotHeaderSize {
		return fmt.Errorf("%w: slot of %d bytes is shorter than its %d-byte header", ErrBadSlotSize, len(slot), SlotHeaderSize)
	}
	if len(payload) > len(slot)-SlotHeaderSize {
		return fmt.Errorf("%w: %d bytes, a slot holds %d; raise the link's slot size", ErrTooLarge, len(payload), len(slot)-SlotHeaderSize)
	}
	writeSlot(slot, &h, payload)
	return nil
}

// writeSlot encodes a message the caller has checked fits.
func writeSlot(slot []byte, h *Header, payload []byte) {
	writeHeader(slot, h, len(payload))
	copy(slot[SlotHeaderSize:], payload) // one bulk copy
}

// writeHeader encodes a slot header for a payload of n bytes.
func writeHeader(slot []byte, h *Header, n int) {
	s := slot[:SlotHeaderSize:SlotHeaderSize]
	binary.LittleEndian.PutUint64(s[SlotOffID:], h.ID)
	binary.LittleEndian.PutUint32(s[SlotOffType:], h.Type)
	binary.LittleEndian.PutUint32(s[SlotOffLen:], uint32(n))
	binary.LittleEndian.PutUint32(s[SlotOffFlags:], uint32(h.Flags))
	binary.LittleEndian.PutUint32(s[SlotOffOrigin:], h.Origin)
	binary.LittleEndian.PutUint64(s[SlotOffEnqueued:], h.Enqueued)
}

// readSlot decodes slot's header into h and returns its payload, aliasing
// slot. Whatever the bytes hold, it never reads past the slot: queue memory
// may be written by a faulty peer. On a bad length the payload is nil and ok
// is false; h still holds what could be read.
func readSlot(slot []byte, h *Header) (payload []byte, ok bool) {
	if len(slot) < SlotHeaderSize {
		*h = Header{}
		return nil, false
	}
	s := slot[:SlotHeaderSize:SlotHeaderSize]
	h.ID = binary.LittleEndian.Uint64(s[SlotOffID:])
	h.Type = binary.LittleEndian.Uint32(s[SlotOffType:])
	h.Flags = Flags(binary.LittleEndian.Uint32(s[SlotOffFlags:]))
	h.Origin = binary.LittleEndian.Uint32(s[SlotOffOrigin:])
	h.Enqueued = binary.LittleEndian.Uint64(s[SlotOffEnqueued:])
	n := binary.LittleEndian.Uint32(s[SlotOffLen:])
	if uint64(n) > uint64(len(slot)-SlotHeaderSize) {
		return nil, false
	}
	return slot[SlotHeaderSize : SlotHeaderSize+int(n)], true
}

// DecodeSlot reads the header and payload of slot, which must be a whole
// slot. The payload aliases slot. A slot too short for its header or whose
// length field points past its end is an error wrapping ErrCorruptSlot.
func DecodeSlot(slot []byte) (Header, []byte, error) {
	var h Header
	payload, ok := readSlot(slot, &h)
	if !ok {
		return h, nil, corruptSlot(slot, &h)
	}
	return h, payload, nil
}

func corruptSlot(slot []byte, h *Header) error {
	if len(slot) < SlotHeaderSize {
		return fmt.Errorf("%w: %d bytes is shorter than the %d-byte slot header", ErrCorruptSlot, len(slot), SlotHeaderSize)
	}
	return fmt.Errorf("%w: message %d claims %d payload bytes, the slot holds %d",
		ErrCorruptSlot, h.ID, binary.LittleEndian.Uint32(slot[SlotOffLen:]), len(slot)-SlotHeaderSize)
}
