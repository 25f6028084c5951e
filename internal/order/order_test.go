package order

import (
	"encoding/binary"
	"runtime"
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

// StoreSeqCst32 and StoreSeqCst64 order a store before a later load of
// another word: in the store-buffering litmus (each side stores its flag,
// then loads the other's), at least one side sees the other's store.
func TestSeqCstStoresForbidStoreBuffering(t *testing.T) {
	const rounds = 5000
	b := make([]byte, 64)
	a32, c64 := Word32(b, 0), Word64(b, 8)
	var r1, r2 [rounds]uint64
	start := make([]uint32, rounds)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		for i := range rounds {
			for LoadAcquire32(&start[i]) == 0 {
				runtime.Gosched()
			}
			StoreSeqCst32(a32, uint32(i+1))
			r1[i] = LoadAcquire64(c64)
		}
	}()
	go func() {
		defer wg.Done()
		for i := range rounds {
			for LoadAcquire32(&start[i]) == 0 {
				runtime.Gosched()
			}
			StoreSeqCst64(c64, uint64(i+1))
			r2[i] = uint64(LoadAcquire32(a32))
		}
	}()
	for i := range rounds {
		StoreRelease32(&start[i], 1)
		for LoadAcquire64(c64) < uint64(i+1) || LoadAcquire32(a32) < uint32(i+1) {
			runtime.Gosched()
		}
	}
	wg.Wait()
	for i := range rounds {
		if r1[i] < uint64(i+1) && r2[i] < uint64(i+1) {
			t.Fatalf("round %d: each side missed the other's store (%d, %d): a seq-cst store was overtaken by a load", i, r1[i], r2[i])
		}
	}
	if got := LoadAcquire32(a32); got != rounds {
		t.Fatalf("StoreSeqCst32 left %d, want %d", got, rounds)
	}
}
