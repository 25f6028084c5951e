package ringkernel

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/ringactor/ringactor/p2pqueue"
)

// FuzzDecodeRecord decodes arbitrary bytes as a trace-ring record payload
// (device memory, not trusted): it returns the record or an error wrapping
// ErrCorruptSlot, never panics or reads past the payload; a record that
// decodes re-encodes to the same bytes (its text cut to RecMaxText, as
// EncodeRecord cuts it), and those decode to the same record.
func FuzzDecodeRecord(f *testing.F) {
	rec := func(deq, done uint64, code ErrorCode, text string) []byte {
		buf := make([]byte, TraceSlotSize-p2pqueue.SlotHeaderSize)
		return buf[:EncodeRecord(buf, deq, done, code, uint32(len(text)), text)]
	}
	f.Add(rec(1, 2, CodeNone, ""))
	f.Add(rec(100, 250, CodeDomain, "kernels: negative input to sqrt"))
	long := rec(0, ^uint64(0), CodeCorruptQueue, string(bytes.Repeat([]byte("x"), 400)))
	f.Add(long)
	f.Add(long[:RecOffText-1])
	over := append(rec(3, 4, CodeStage, ""), bytes.Repeat([]byte("y"), RecMaxText+1)...)
	binary.LittleEndian.PutUint32(over[RecOffTextLen:], RecMaxText+1)
	f.Add(over) // more text than a trace slot holds: re-encoding cuts it
	bad := rec(5, 6, CodeStage, "abc")
	binary.LittleEndian.PutUint32(bad[RecOffTextLen:], 4)
	f.Add(bad)
	binary.LittleEndian.PutUint32(bad[RecOffTextLen:], ^uint32(0))
	f.Add(bad)
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, p []byte) {
		in := append([]byte(nil), p...)
		deq, done, code, from, text, err := decodeRecord(p)
		if !bytes.Equal(in, p) {
			t.Fatal("decodeRecord changed its input")
		}
		if err != nil {
			if !errors.Is(err, p2pqueue.ErrCorruptSlot) {
				t.Fatalf("error %v does not wrap ErrCorruptSlot", err)
			}
			if len(p) >= RecOffText && uint64(binary.LittleEndian.Uint32(p[RecOffTextLen:])) <= uint64(len(p)-RecOffText) {
				t.Fatalf("refused a well-formed record: %v", err)
			}
			return
		}
		if len(p) < RecOffText || len(text) > len(p)-RecOffText {
			t.Fatalf("a %d-byte payload gave %d bytes of text", len(p), len(text))
		}
		buf := make([]byte, TraceSlotSize-p2pqueue.SlotHeaderSize)
		n := EncodeRecord(buf, deq, done, code, from, text)
		want := min(len(text), RecMaxText)
		if n != RecOffText+want || !bytes.Equal(buf[:RecOffTextLen], p[:RecOffTextLen]) ||
			binary.LittleEndian.Uint32(buf[RecOffTextLen:]) != uint32(want) || !bytes.Equal(buf[RecOffFrom:RecOffText], p[RecOffFrom:RecOffText]) || !bytes.Equal(buf[RecOffText:n], p[RecOffText:RecOffText+want]) {
			t.Fatalf("re-encoded % x, from % x", buf[:n], p)
		}
		deq2, done2, code2, from2, text2, err := decodeRecord(buf[:n])
		if err != nil || deq2 != deq || done2 != done || code2 != code || from2 != from || text2 != text[:want] {
			t.Fatalf("round trip: %d %d %v %d %q %v, want %d %d %v %d %q", deq2, done2, code2, from2, text2, err, deq, done, code, from, text[:want])
		}
		// What the sim and CUDA loops emit fits a trace slot whatever
		// the text.
		if n > TraceSlotSize-p2pqueue.SlotHeaderSize {
			t.Fatalf("a record of %d bytes does not fit a trace slot", n)
		}
	})
}
