package order

import (
	"encoding/binary"
	"sync"
	"testing"
)

// A word viewed in region memory is the little-endian field the layouts
// define, and what one goroutine publishes after its plain writes another
// sees, with those writes, once it observes the word.
func TestWordsAndPublication(t *testing.T) {
	if !LittleEndian {
		t.Skip("big-endian host: the layouts refuse it")
	}
	b := make([]byte, 64)
	StoreRelease64(Word64(b, 8), 0x0102030405060708)
	StoreRelease32(Word32(b, 16), 0x0a0b0c0d)
	if got := binary.LittleEndian.Uint64(b[8:]); got != 0x0102030405060708 {
		t.Fatalf("u64 at 8: %#x", got)
	}
	if got := binary.LittleEndian.Uint32(b[16:]); got != 0x0a0b0c0d || LoadAcquire32(Word32(b, 16)) != 0x0a0b0c0d {
		t.Fatalf("u32 at 16: %#x", got)
	}
	data := make([]uint64, 1000)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := range data {
			data[i] = uint64(i) * 3 // plain writes, covered by the release below
		}
		StoreSeqCst64(Word64(b, 0), 1)
		StoreRelease64(Word64(b, 24), uint64(len(data)))
	}()
	for LoadAcquire64(Word64(b, 24)) != uint64(len(data)) {
	}
	for i, v := range data {
		if v != uint64(i)*3 {
			t.Fatalf("data[%d] = %d after the release was observed", i, v)
		}
	}
	wg.Wait()
}
