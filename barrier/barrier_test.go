package barrier_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ringactor/ringactor/barrier"
	"github.com/ringactor/ringactor/p2pqueue"
)

func newFlags(t testing.TB, n int, opts ...barrier.Option) *barrier.Flags {
	t.Helper()
	size, err := barrier.Size(n)
	if err != nil {
		t.Fatal(err)
	}
	r, err := p2pqueue.NewAlignedRegion(size)
	if err != nil {
		t.Fatal(err)
	}
	f, err := barrier.Init(r, n, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func claim(t testing.TB, f *barrier.Flags, i int) *barrier.Participant {
	t.Helper()
	p, err := f.Participant(i)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// runPhases runs n participants through phases phases, each on its own
// goroutine, skewed by random yields and sleeps (and a deterministic long
// sleep of one participant every 97 phases). Before arriving at a phase a
// participant counts itself into arrivals[phase]; after its wait it checks
// that all n had: a participant that passed early sees fewer. It returns
// how many passes were early.
//
// With wait false the participants only Arrive (the mutant: the barrier
// without its wait); the test of the mutant shows the check catches it.
// With wait true, each also writes a plain (non-atomic) word before
// arriving and reads everyone's after waiting, double-buffered by phase
// parity: the race detector then checks that the barrier orders plain
// memory (release on arrive, acquire on wait), and the values that it is
// visible.
func runPhases(t *testing.T, n, phases int, wait bool) int64 {
	t.Helper()
	f := newFlags(t, n)
	arrivals := make([]atomic.Int32, phases)
	data := [2][]int{make([]int, n), make([]int, n)}
	var early atomic.Int64
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		p := claim(t, f, i)
		rng := rand.New(rand.NewPCG(uint64(i), 42))
		wg.Go(func() {
			for ph := range phases {
				switch {
				case ph%97 == 0 && ph/97%n == i:
					time.Sleep(300 * time.Microsecond)
				case rng.IntN(200) == 0:
					time.Sleep(time.Duration(rng.IntN(100)) * time.Microsecond)
				case rng.IntN(10) == 0:
					runtime.Gosched()
				}
				arrivals[ph].Add(1)
				if wait {
					data[ph%2][i] = ph
					if err := p.ArriveAndWait(ctx); err != nil {
						errs <- fmt.Errorf("participant %d phase %d: %w", i, ph, err)
						return
					}
				} else if err := p.Arrive(uint64(ph + 1)); err != nil {
					errs <- err
					return
				}
				if got := arrivals[ph].Load(); got != int32(n) {
					early.Add(1)
					if wait {
						errs <- fmt.Errorf("participant %d passed phase %d with %d of %d arrived", i, ph, got, n)
						return
					}
				}
				if wait {
					for j := range n {
						if v := data[ph%2][j]; v != ph {
							errs <- fmt.Errorf("participant %d at phase %d sees participant %d's word at %d", i, ph, j, v)
							return
						}
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	return early.Load()
}

// 4 participants x 10,000 phases: nobody passes a phase before all four
// arrived, and what each wrote before arriving is what the others read.
func TestPhases(t *testing.T) {
	phases := 10000
	if testing.Short() {
		phases = 1000
	}
	start := time.Now()
	if early := runPhases(t, 4, phases, true); early != 0 {
		t.Fatalf("%d early passes", early)
	}
	t.Logf("%d phases x 4 in %v (%v a phase)", phases, time.Since(start), time.Since(start)/time.Duration(phases))
}

// The mutation check of TestPhases: the same run with the wait removed
// must be caught passing early, or TestPhases would prove nothing.
func TestPhasesCheckCatchesNoWait(t *testing.T) {
	if early := runPhases(t, 4, 400, false); early == 0 {
		t.Fatal("without the wait nobody passed early: the check in runPhases cannot catch a broken barrier")
	}
}

// A wait whose deadline passes names exactly the participants missing, by
// index and name, and matches both ErrTimeout and DeadlineExceeded; a
// cancelled wait matches Canceled but not ErrTimeout.
func TestTimeoutNamesMissing(t *testing.T) {
	f := newFlags(t, 4, barrier.WithNames("gpu0", "gpu1", "host", "gpu3"))
	p0, p2, p3 := claim(t, f, 0), claim(t, f, 2), claim(t, f, 3)
	for _, p := range []*barrier.Participant{p0, p2, p3} {
		if err := p.Arrive(1); err != nil {
			t.Fatal(err)
		}
	}
	if err := p3.Arrive(2); err != nil {
		t.Fatal(err)
	}
	start := time.Now() // before the deadline is set, so the wait cannot look shorter than it
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	err := p0.Wait(ctx, 1)
	if d := time.Since(start); d < 20*time.Millisecond || d > 5*time.Second {
		t.Errorf("wait took %v with a 20ms deadline", d)
	}
	var te *barrier.TimeoutError
	if !errors.As(err, &te) {
		t.Fatalf("got %v, want a *TimeoutError", err)
	}
	if !errors.Is(err, barrier.ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("%v: not ErrTimeout and DeadlineExceeded", err)
	}
	if fmt.Sprint(te.Missing) != "[1]" || fmt.Sprint(te.Names) != "[gpu1]" || te.Generation != 1 {
		t.Errorf("missing %v %v at %d, want [1] [gpu1] at 1", te.Missing, te.Names, te.Generation)
	}
	if !strings.Contains(err.Error(), "1 (gpu1)") {
		t.Errorf("message does not name the missing participant: %v", err)
	}

	// Generation 2: only gpu3 is there.
	ctx2, cancel2 := context.WithCancel(context.Background())
	cancel2()
	err = f.Wait(ctx2, 2)
	if !errors.As(err, &te) || fmt.Sprint(te.Missing) != "[0 1 2]" || fmt.Sprint(te.Names) != "[gpu0 gpu1 host]" {
		t.Fatalf("got %v, want participants 0, 1, 2 missing", err)
	}
	if errors.Is(err, barrier.ErrTimeout) || !errors.Is(err, context.Canceled) {
		t.Errorf("%v: a cancelled wait should be Canceled, not ErrTimeout", err)
	}

	// Without names, indices only.
	g := newFlags(t, 2)
	if err := claim(t, g, 1).Arrive(1); err != nil {
		t.Fatal(err)
	}
	err = g.Wait(ctx2, 1)
	if !errors.As(err, &te) || fmt.Sprint(te.Missing) != "[0]" || te.Names != nil {
		t.Fatalf("got %v, want participant 0 missing, no names", err)
	}

	// The last arrival turns the same wait into a success.
	p1 := claim(t, f, 1)
	if err := p1.Arrive(1); err != nil {
		t.Fatal(err)
	}
	if err := p0.Wait(ctx2, 1); err != nil {
		t.Fatalf("all arrived, yet: %v", err)
	}
}

// Arrivals must increase; a second claim, a bad index and a bad name list
// are errors; Missing and Generation read the words.
func TestParticipantMisuse(t *testing.T) {
	f := newFlags(t, 3)
	p := claim(t, f, 1)
	if _, err := f.Participant(1); !errors.Is(err, barrier.ErrClaimed) {
		t.Errorf("second claim: %v", err)
	}
	for _, i := range []int{-1, 3, math.MaxInt} {
		if _, err := f.Participant(i); !errors.Is(err, barrier.ErrBadIndex) {
			t.Errorf("Participant(%d): %v", i, err)
		}
		if _, err := f.Generation(i); !errors.Is(err, barrier.ErrBadIndex) {
			t.Errorf("Generation(%d): %v", i, err)
		}
	}
	if err := p.Arrive(0); !errors.Is(err, barrier.ErrBadGeneration) {
		t.Errorf("Arrive(0): %v", err)
	}
	if err := p.Arrive(5); err != nil {
		t.Fatal(err)
	}
	for _, g := range []uint64{5, 4} {
		if err := p.Arrive(g); !errors.Is(err, barrier.ErrBadGeneration) {
			t.Errorf("Arrive(%d) after 5: %v", g, err)
		}
	}
	if g, _ := f.Generation(1); g != 5 || p.Last() != 5 {
		t.Errorf("generation %d, last %d; want 5", g, p.Last())
	}
	if m := f.Missing(5); fmt.Sprint(m) != "[0 2]" {
		t.Errorf("Missing(5) = %v", m)
	}
	if m := f.Missing(0); m != nil {
		t.Errorf("Missing(0) = %v", m)
	}
	if err := p.Arrive(math.MaxUint64); err != nil {
		t.Fatal(err)
	}
	if err := p.ArriveAndWait(context.Background()); !errors.Is(err, barrier.ErrBadGeneration) {
		t.Errorf("ArriveAndWait past MaxUint64: %v", err)
	}
	if _, err := barrier.Init(f.Region(), 3, barrier.WithNames("a", "b")); !errors.Is(err, barrier.ErrBadNames) {
		t.Errorf("2 names for 3: %v", err)
	}
	// A handle over the same memory continues from the words.
	g, err := barrier.Attach(f.Region(), barrier.WithNames("a", "b", "c"))
	if err != nil {
		t.Fatal(err)
	}
	q := claim(t, g, 1)
	if q.Last() != math.MaxUint64 || fmt.Sprint(g.Names()) != "[a b c]" || g.N() != 3 {
		t.Errorf("attached handle: last %d, names %v, n %d", q.Last(), g.Names(), g.N())
	}
}

func TestSize(t *testing.T) {
	for n, want := range map[int]int{1: 256, 4: 640, barrier.MaxParticipants: 128 + barrier.MaxParticipants*128} {
		if got, err := barrier.Size(n); err != nil || got != want {
			t.Errorf("Size(%d) = %d, %v; want %d", n, got, err, want)
		}
	}
	for _, n := range []int{0, -1, barrier.MaxParticipants + 1, math.MaxInt} {
		if _, err := barrier.Size(n); !errors.Is(err, barrier.ErrBadCount) {
			t.Errorf("Size(%d): %v", n, err)
		}
		if _, err := barrier.Image(n); !errors.Is(err, barrier.ErrBadCount) {
			t.Errorf("Image(%d): %v", n, err)
		}
	}
}

// Attach accepts what Init and Image write, and rejects bad magic,
// version, counts and regions with an error naming the problem.
func TestAttach(t *testing.T) {
	img, err := barrier.Image(4)
	if err != nil {
		t.Fatal(err)
	}
	f := newFlags(t, 4)
	if got := f.Region().Bytes; string(got) != string(img) {
		t.Fatal("Init and Image write different bytes")
	}
	region := func(b []byte, extra int) p2pqueue.Region {
		r, err := p2pqueue.NewAlignedRegion(len(b) + extra)
		if err != nil {
			t.Fatal(err)
		}
		copy(r.Bytes, b)
		return r
	}
	g, err := barrier.Attach(region(img, 0))
	if err != nil || g.N() != 4 {
		t.Fatalf("Attach of an image: %v", err)
	}
	if _, err := barrier.Attach(region(img, 100)); err != nil {
		t.Fatalf("Attach of a larger region: %v", err)
	}
	patch := func(off int, b ...byte) []byte {
		c := append([]byte(nil), img...)
		copy(c[off:], b)
		return c
	}
	cases := []struct {
		name string
		r    p2pqueue.Region
		want error
	}{
		{"zero memory", region(make([]byte, len(img)), 0), barrier.ErrBadMagic},
		{"bad magic", region(patch(barrier.OffMagic, 'X'), 0), barrier.ErrBadMagic},
		{"queue magic", region(patch(barrier.OffMagic, 0x52, 0x41, 0x52, 0x51), 0), barrier.ErrBadMagic},
		{"version 2", region(patch(barrier.OffVersion, 2, 0), 0), barrier.ErrBadVersion},
		{"version 0", region(patch(barrier.OffVersion, 0, 0), 0), barrier.ErrBadVersion},
		{"0 participants", region(patch(barrier.OffParticipants, 0, 0, 0, 0), 0), barrier.ErrBadCount},
		{"too many participants", region(patch(barrier.OffParticipants, 1, 0x10, 0, 0), 0), barrier.ErrBadCount},
		{"huge count", region(patch(barrier.OffParticipants, 0xff, 0xff, 0xff, 0xff), 0), barrier.ErrBadCount},
		{"count beyond region", region(patch(barrier.OffParticipants, 5, 0, 0, 0), 0), barrier.ErrRegionTooSmall},
		{"truncated", region(img[:len(img)-1], 0), barrier.ErrRegionTooSmall},
		{"header only", region(img[:barrier.HeaderSize], 0), barrier.ErrRegionTooSmall},
		{"empty", p2pqueue.Region{Bytes: []byte{}, Device: -1}, barrier.ErrRegionTooSmall},
		{"nil bytes", p2pqueue.Region{Device: -1}, barrier.ErrNotHostVisible},
		{"device memory", p2pqueue.Region{Bytes: img, Kind: p2pqueue.DeviceMemory, Device: 1}, barrier.ErrNotHostVisible},
		{"misaligned", func() p2pqueue.Region { r := region(img, 8); r.Bytes = r.Bytes[8:]; return r }(), barrier.ErrMisaligned},
	}
	for _, c := range cases {
		if _, err := barrier.Attach(c.r); !errors.Is(err, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, err, c.want)
		}
	}
	if _, err := barrier.Attach(region(img, 0), barrier.WithNames("a")); !errors.Is(err, barrier.ErrBadNames) {
		t.Errorf("1 name for 4: %v", err)
	}
	small, _ := p2pqueue.NewAlignedRegion(300)
	if _, err := barrier.Init(small, 2); !errors.Is(err, barrier.ErrRegionTooSmall) {
		t.Errorf("Init of 2 in 300 bytes: %v", err)
	}
	if _, err := barrier.Init(small, 0); !errors.Is(err, barrier.ErrBadCount) {
		t.Errorf("Init of 0: %v", err)
	}
}

// Init over a used region resets every generation.
func TestInitResets(t *testing.T) {
	f := newFlags(t, 2)
	if err := claim(t, f, 0).Arrive(7); err != nil {
		t.Fatal(err)
	}
	g, err := barrier.Init(f.Region(), 2)
	if err != nil {
		t.Fatal(err)
	}
	if gen, _ := g.Generation(0); gen != 0 {
		t.Fatalf("generation %d after Init", gen)
	}
}
