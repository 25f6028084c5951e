package barrier

import (
	"context"
	"fmt"
	"sync/atomic"
	"unsafe"

	"github.com/ringactor/ringactor/internal/order"
	"github.com/ringactor/ringactor/internal/wait"
	"github.com/ringactor/ringactor/p2pqueue"
)

// Flags is a flag array in host-visible memory: the host's handle on a
// barrier that goroutines, the host and GPUs may share. Its methods are
// safe for concurrent use; a Participant is not (it belongs to one agent).
type Flags struct {
	r       p2pqueue.Region
	n       int
	words   []*uint64
	names   []string
	claimed []atomic.Bool
}

// Option configures Init and Attach.
type Option func(*options)

type options struct{ names []string }

// WithNames names the participants, in index order, for errors
// (TimeoutError.Names) and Names. There must be one name per participant.
// Names are this handle's, not the memory's.
func WithNames(names ...string) Option {
	return func(o *options) { o.names = append([]string(nil), names...) }
}

// Init writes a fresh barrier for n participants into r, every generation
// 0, and returns its handle. r must be host-visible, RegionAlign-aligned
// and at least Size(n) bytes. The magic is written last, with a release
// store, so an Attach that sees it sees the rest.
func Init(r p2pqueue.Region, n int, opts ...Option) (*Flags, error) {
	size, err := Size(n)
	if err != nil {
		return nil, err
	}
	if err := checkRegion(r, size, fmt.Sprintf("%d participants need", n)); err != nil {
		return nil, err
	}
	o, err := applyOptions(n, opts)
	if err != nil {
		return nil, err
	}
	b := r.Bytes
	order.StoreRelease32(order.Word32(b, OffMagic), 0) // no barrier here while the rest is written
	clear(b[OffMagic+4 : size])
	putU16(b[OffVersion:], Version)
	putU32(b[OffParticipants:], uint32(n))
	order.StoreRelease32(order.Word32(b, OffMagic), Magic)
	return newFlags(r, n, o), nil
}

// Attach validates the barrier in r and returns its handle: magic,
// version, participant count (1..MaxParticipants) and that r holds every
// participant's line. It never trusts the memory: anything else is an
// error, never a panic. Generations are not validated; any value is one
// some participant may have stored.
func Attach(r p2pqueue.Region, opts ...Option) (*Flags, error) {
	minSize, _ := Size(1)
	if err := checkRegion(r, minSize, "a barrier needs at least"); err != nil {
		return nil, err
	}
	b := r.Bytes
	if m := order.LoadAcquire32(order.Word32(b, OffMagic)); m != Magic {
		return nil, fmt.Errorf("%w: %#08x, want %#08x", ErrBadMagic, m, Magic)
	}
	if v := getU16(b[OffVersion:]); v != Version {
		return nil, fmt.Errorf("%w: %d, this build reads %d", ErrBadVersion, v, Version)
	}
	n32 := order.LoadAcquire32(order.Word32(b, OffParticipants))
	if n32 < 1 || n32 > MaxParticipants {
		return nil, fmt.Errorf("%w: %d participants in the header; want 1..%d", ErrBadCount, n32, MaxParticipants)
	}
	n := int(n32)
	size, _ := Size(n)
	if len(b) < size {
		return nil, fmt.Errorf("%w: %d bytes; the header's %d participants need %d", ErrRegionTooSmall, len(b), n, size)
	}
	o, err := applyOptions(n, opts)
	if err != nil {
		return nil, err
	}
	return newFlags(r, n, o), nil
}

func checkRegion(r p2pqueue.Region, size int, what string) error {
	if !order.LittleEndian {
		return ErrBigEndian
	}
	if !r.Kind.HostVisible() || r.Bytes == nil {
		return fmt.Errorf("%w: %s memory on device %d has no host mapping; initialise it from the device (Image) or use mapped pinned memory",
			ErrNotHostVisible, r.Kind, r.Device)
	}
	if len(r.Bytes) < size {
		return fmt.Errorf("%w: %d bytes; %s %d", ErrRegionTooSmall, len(r.Bytes), what, size)
	}
	if p := uintptr(unsafe.Pointer(&r.Bytes[0])); p%RegionAlign != 0 {
		return fmt.Errorf("%w: base %#x is not %d-byte aligned; allocate with p2pqueue.NewAlignedRegion",
			ErrMisaligned, p, RegionAlign)
	}
	return nil
}

func applyOptions(n int, opts []Option) (options, error) {
	var o options
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	if o.names != nil && len(o.names) != n {
		return o, fmt.Errorf("%w: %d names for %d participants", ErrBadNames, len(o.names), n)
	}
	return o, nil
}

func newFlags(r p2pqueue.Region, n int, o options) *Flags {
	f := &Flags{r: r, n: n, words: make([]*uint64, n), names: o.names, claimed: make([]atomic.Bool, n)}
	for i := range f.words {
		f.words[i] = order.Word64(r.Bytes, lineOff(i))
	}
	return f
}

// N is the number of participants.
func (f *Flags) N() int { return f.n }

// Names returns the participants' names, or nil when none were given.
func (f *Flags) Names() []string { return append([]string(nil), f.names...) }

// Region is the memory the barrier lives in (its DeviceAddr is what a
// kernel passes to ra_barrier_arrive and ra_barrier_wait).
func (f *Flags) Region() p2pqueue.Region { return f.r }

// Generation returns the last generation participant i arrived at (0
// before its first arrival).
func (f *Flags) Generation(i int) (uint64, error) {
	if i < 0 || i >= f.n {
		return 0, fmt.Errorf("%w: %d; the barrier has participants 0..%d", ErrBadIndex, i, f.n-1)
	}
	return order.LoadAcquire64(f.words[i]), nil
}

// Missing returns the indices of the participants that have not reached
// generation gen, in order.
func (f *Flags) Missing(gen uint64) []int {
	var m []int
	for i, w := range f.words {
		if order.LoadAcquire64(w) < gen {
			m = append(m, i)
		}
	}
	return m
}

// Wait waits until every participant has reached generation gen, without
// being one: for an observer. See Participant.Wait.
func (f *Flags) Wait(ctx context.Context, gen uint64) error {
	w := wait.Waiter{P: barrierWait}
	defer w.Stop()
	// Words only grow (each has one writer, whose generations increase),
	// so a word seen at gen is not read again.
	i := 0
	for {
		for i < f.n && order.LoadAcquire64(f.words[i]) >= gen {
			i++
		}
		if i == f.n {
			return nil
		}
		if err := w.Wait(ctx); err != nil {
			return f.timeout(gen, err)
		}
	}
}

// timeout builds the error of a wait for gen that ctx ended with err, or
// nil when the last participant arrived meanwhile.
func (f *Flags) timeout(gen uint64, err error) error {
	missing := f.Missing(gen)
	if len(missing) == 0 {
		return nil
	}
	e := &TimeoutError{Generation: gen, Missing: missing, Err: err}
	if f.names != nil {
		e.Names = make([]string, len(missing))
		for k, i := range missing {
			e.Names[k] = f.names[i]
		}
	}
	return e
}

// Participant claims participant i's handle: the only writer of its word
// (in this process; other agents sharing the memory must be given other
// indices, as the memory has no read-modify-write to claim with). A second
// claim of the same index is ErrClaimed. The handle continues from the
// generation already in the word.
func (f *Flags) Participant(i int) (*Participant, error) {
	if i < 0 || i >= f.n {
		return nil, fmt.Errorf("%w: %d; the barrier has participants 0..%d", ErrBadIndex, i, f.n-1)
	}
	if !f.claimed[i].CompareAndSwap(false, true) {
		return nil, fmt.Errorf("%w: participant %d%s", ErrClaimed, i, f.nameOf(i))
	}
	return &Participant{f: f, i: i, word: f.words[i], last: order.LoadAcquire64(f.words[i])}, nil
}

func (f *Flags) nameOf(i int) string {
	if f.names == nil {
		return ""
	}
	return " (" + f.names[i] + ")"
}

// Participant is one participant's handle: it arrives by storing its
// generation into its own word. It belongs to one goroutine.
type Participant struct {
	f    *Flags
	i    int
	word *uint64
	last uint64
}

// Index is the participant's index.
func (p *Participant) Index() int { return p.i }

// Flags is the flag array the participant belongs to.
func (p *Participant) Flags() *Flags { return p.f }

// Last is the last generation the participant arrived at.
func (p *Participant) Last() uint64 { return p.last }

// Arrive announces that the participant reached generation gen: a release
// store of gen into its word, after every write of this goroutine before
// it. gen must be greater than the participant's last generation.
func (p *Participant) Arrive(gen uint64) error {
	if gen <= p.last {
		return fmt.Errorf("%w: participant %d%s arrived at %d after %d", ErrBadGeneration, p.i, p.f.nameOf(p.i), gen, p.last)
	}
	order.StoreRelease64(p.word, gen)
	p.last = gen
	return nil
}

// Wait waits until every participant has reached generation gen (acquire
// loads of every word, so everything each wrote before arriving is visible
// after), spinning briefly, then yielding, then sleeping with backoff. When
// ctx ends first it returns a *TimeoutError naming the participants still
// missing (ErrTimeout on a deadline).
func (p *Participant) Wait(ctx context.Context, gen uint64) error { return p.f.Wait(ctx, gen) }

// ArriveAndWait arrives at the generation after the participant's last
// and waits for everyone to reach it: one phase of a barrier whose
// participants all use it. After a timeout the participant has still
// arrived; the next call arrives at the next generation.
func (p *Participant) ArriveAndWait(ctx context.Context) error {
	gen := p.last + 1
	if err := p.Arrive(gen); err != nil {
		return err
	}
	return p.Wait(ctx, gen)
}
