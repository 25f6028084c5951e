package account

import (
	"sync"
	"testing"
)

// Messages entered from several goroutines and ended from others, some
// delivered, some dead, some moved from delivered to dead: every reading
// taken meanwhile has ends ≤ Sent + Copied (InFlight never clamps for a
// real message), and once all have ended the account is exact.
func TestConcurrentReadingsNeverUndercountSent(t *testing.T) {
	var a Account
	const producers, per = 4, 5000
	ends := make(chan int, 1024)
	var wg sync.WaitGroup
	for p := range producers {
		wg.Go(func() {
			for i := range per {
				a.Enter(1)
				ends <- p*per + i
			}
		})
	}
	done := make(chan struct{})
	var ew sync.WaitGroup
	ew.Go(func() {
		for id := range ends {
			switch id % 3 {
			case 0:
				a.Deliver(1)
			case 1:
				a.DeadLetter()
			default:
				a.Deliver(1)
				a.Undeliver()
			}
		}
	})
	var bad []Totals
	var rw sync.WaitGroup
	rw.Go(func() {
		for {
			select {
			case <-done:
				return
			default:
			}
			if t := a.Read(nil); t.Delivered+t.DeadLettered > t.Sent {
				bad = append(bad, t)
			}
		}
	})
	wg.Wait()
	close(ends)
	ew.Wait()
	close(done)
	rw.Wait()
	if len(bad) > 0 {
		t.Fatalf("%d readings counted more ends than messages sent, e.g. %+v", len(bad), bad[0])
	}
	got := a.Read(nil)
	n := uint64(producers * per)
	want := Totals{Sent: n, Delivered: (n + 2) / 3, DeadLettered: n - (n+2)/3}
	if got != want {
		t.Fatalf("account %+v, want %+v", got, want)
	}
}

// Copies count in: a result copied to three stages is three ends.
func TestCopiesAreMessagesToo(t *testing.T) {
	var a Account
	a.Enter(2)
	a.Deliver(3)
	if got := a.Read(func() uint64 { return 2 }); got.InFlight != 1 || got.Copied != 2 {
		t.Fatalf("%+v", got)
	}
	a.DeadLetter()
	if got := a.Read(func() uint64 { return 2 }); got.InFlight != 0 {
		t.Fatalf("%+v", got)
	}
	// A copy that ends before its stage counted it reads 0, never less.
	a.Deliver(1)
	if got := a.Read(func() uint64 { return 2 }); got.InFlight != 0 {
		t.Fatalf("%+v", got)
	}
}

// Auto ids never repeat an explicit one, and explicit ids are kept.
func TestIDsKeepClearOfExplicitOnes(t *testing.T) {
	var a Account
	if a.ID(0) != 1 || a.ID(10) != 10 || a.ID(0) != 11 || a.ID(5) != 5 || a.ID(0) != 12 {
		t.Fatal("ids")
	}
	var wg sync.WaitGroup
	seen := make([]map[uint64]bool, 4)
	for g := range seen {
		seen[g] = map[uint64]bool{}
		wg.Go(func() {
			for range 1000 {
				seen[g][a.ID(0)] = true
			}
		})
	}
	wg.Wait()
	all := map[uint64]bool{}
	for _, s := range seen {
		for id := range s {
			if all[id] {
				t.Fatalf("id %d handed out twice", id)
			}
			all[id] = true
		}
	}
}

// Copies counts fanout-1 copies per message a stage passed on, and reads
// only the stages that copy.
func TestCopiesReadsOnlyCopyingStages(t *testing.T) {
	fan := []int{1, 3, 0, 2}
	read := map[int]bool{}
	n := Copies(len(fan), func(i int) int { return fan[i] }, func(i int) uint64 { read[i] = true; return uint64(10 * (i + 1)) })
	if n != 20*2+40*1 || len(read) != 2 || !read[1] || !read[3] {
		t.Fatalf("copies %d, read %v; want 80 from stages 1 and 3", n, read)
	}
}
