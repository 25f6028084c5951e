package p2pqueue

import (
	"encoding/binary"
	"errors"
	"fmt"
	"testing"
)

// ReadTo reads what Read reads, header and payload, in both formats, a
// corrupt slot and a read without a peek included.
func TestReadToIsRead(t *testing.T) {
	for _, f := range []Format{FormatIndexed, FormatFlagged} {
		t.Run(fmt.Sprint(f), func(t *testing.T) {
			l, err := NewHostQueue(ConfigForFormat(8, 16, f))
			if err != nil {
				t.Fatal(err)
			}
			p, _ := l.Producer()
			c, _ := l.Consumer()
			var h Header
			if _, err := c.ReadTo(0, &h); !errors.Is(err, ErrMisuse) {
				t.Fatalf("read without a peek: %v", err)
			}
			for i := range 3 {
				m := Message{Header: Header{ID: uint64(i + 1), Type: 7, Flags: FlagSampled, Origin: 2, Enqueued: 9}, Payload: []byte(fmt.Sprint("m", i))}
				if err := p.TryEnqueue(&m); err != nil {
					t.Fatal(err)
				}
			}
			if f == FormatIndexed { // a faulty peer's length past the slot
				binary.LittleEndian.PutUint32(l.slot(1)[SlotOffLen:], 1<<31)
			}
			n, err := c.Peek(8)
			if n != 3 || err != nil {
				t.Fatal(n, err)
			}
			for i := range n {
				want, wp, werr := c.Read(i)
				var got Header
				gp, gerr := c.ReadTo(i, &got)
				if got != want || string(gp) != string(wp) || fmt.Sprint(gerr) != fmt.Sprint(werr) {
					t.Errorf("slot %d: ReadTo %+v %q %v, Read %+v %q %v", i, got, gp, gerr, want, wp, werr)
				}
				if f == FormatIndexed && i == 1 && !errors.Is(gerr, ErrCorruptSlot) {
					t.Errorf("corrupt slot read without an error: %v", gerr)
				}
			}
		})
	}
}
