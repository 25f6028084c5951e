package p2pqueue

import "fmt"

// ReadTo is Read with the header written into *h: for a consumer that
// keeps a peeked batch's headers in place (a Header returned by value is
// copied on its way, which costs a host pump as much as the rest of a
// read). The payload aliases the slot and is valid until Release.
func (c *Consumer) ReadTo(i int, h *Header) ([]byte, error) {
	if i < 0 || i >= c.peeked {
		*h = Header{}
		return nil, fmt.Errorf("%w: read of slot %d of a peek of %d; call Peek first", ErrMisuse, i, c.peeked)
	}
	idx := c.head + uint64(i)
	if c.l.cfg.Format == FormatFlagged {
		var err error
		var payload []byte
		*h, payload, err = c.readFlagged(i, idx)
		return payload, err
	}
	slot := c.l.slot(idx)
	payload, ok := readSlot(slot, h)
	if !ok {
		return nil, fmt.Errorf("%s slot %d: %w", c.l.cfg.LinkID.named(), idx, corruptSlot(slot, h))
	}
	return payload, nil
}
