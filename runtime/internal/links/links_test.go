package links

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ringactor/ringactor/p2pqueue"
	rk "github.com/ringactor/ringactor/ringkernel"
	"github.com/ringactor/ringactor/runtime/internal/extid"
)

// A ring-kernel backend is a Memory, and a ring kernel a Kernel.
var (
	_ Memory = rk.Backend(nil)
	_ Kernel = (*rk.Kernel)(nil)
)

// cpus is a topology of CPU devices: every link in host memory, as on
// the simulator.
type cpus struct{}

func (cpus) Peer(a, b int) bool { return false }
func (cpus) CPU(int) bool       { return true }

// memory hands out host regions, counts those not freed, and fails the
// failAt'th Alloc (1-based; 0: none) with errNoMemory, or hands it a
// region too small to format when short is set.
type memory struct {
	mu     sync.Mutex
	allocs int
	live   map[*byte]bool
	frees  int
	failAt int
	short  bool
}

var errNoMemory = errors.New("out of memory")

func (m *memory) Alloc(device, size int, kind p2pqueue.MemoryKind) (p2pqueue.Region, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.allocs++
	if m.allocs == m.failAt {
		if !m.short {
			return p2pqueue.Region{}, errNoMemory
		}
		size = p2pqueue.OffSlots // formats no slots: Init refuses it
	}
	r, err := p2pqueue.NewHostRegion(size)
	if err != nil {
		return r, err
	}
	r.Kind, r.Device = kind, device
	if m.live == nil {
		m.live = map[*byte]bool{}
	}
	m.live[&r.Bytes[0]] = true
	return r, nil
}

func (m *memory) Free(r p2pqueue.Region) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.live[&r.Bytes[0]] {
		panic("free of a region not allocated, or freed twice")
	}
	delete(m.live, &r.Bytes[0])
	m.frees++
	return nil
}

func (m *memory) inUse() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.live)
}

// kernel is a fake ring kernel whose loop ends on end().
type kernel struct {
	ended chan struct{}
}

func newKernel() *kernel                 { return &kernel{ended: make(chan struct{})} }
func (k *kernel) Ended() <-chan struct{} { return k.ended }
func (k *kernel) end()                   { close(k.ended) }

// eventually waits up to a few seconds for cond.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestFreeAtOnceWhenKernelsEnded(t *testing.T) {
	m := &memory{}
	lg := NewLedger(m, cpus{})
	l, pl, err := lg.New(p2pqueue.Host, 0, 16, 64, p2pqueue.NewLinkID(1, p2pqueue.RoleIn, 0, 0))
	if err != nil {
		t.Fatal(err)
	}
	if pl.Kind != p2pqueue.LinkIngress || pl.Memory != p2pqueue.HostMemory || pl.Device != 0 {
		t.Errorf("placement %v; want ingress in host memory on device 0", pl)
	}
	if got := l.Config().LinkID; got != p2pqueue.NewLinkID(1, p2pqueue.RoleIn, 0, 0) {
		t.Errorf("link id %v", got)
	}
	k := newKernel()
	lg.Uses(k, []*p2pqueue.Link{l})
	k.end()
	if lg.Live() != 1 || m.inUse() != 1 {
		t.Fatalf("live %d, in use %d; want 1, 1", lg.Live(), m.inUse())
	}
	if err := lg.Free(l); err != nil {
		t.Fatal(err)
	}
	if lg.Live() != 0 || m.inUse() != 0 {
		t.Fatalf("after Free: live %d, in use %d; want 0, 0 at once", lg.Live(), m.inUse())
	}
}

func TestFreedOnlyAfterLastKernelEnds(t *testing.T) {
	m := &memory{}
	lg := NewLedger(m, cpus{})
	l, _, err := lg.New(0, 1, 16, 64, p2pqueue.NewLinkID(1, p2pqueue.RoleOut, 0, 1))
	if err != nil {
		t.Fatal(err)
	}
	k1, k2, k3 := newKernel(), newKernel(), newKernel()
	lg.Uses(k1, nil, []*p2pqueue.Link{l})
	lg.Uses(k2, []*p2pqueue.Link{l})
	lg.Uses(k3, []*p2pqueue.Link{l})
	k1.end() // ended before Free: passed over
	if err := lg.Free(l); err != nil {
		t.Fatal(err)
	}
	if lg.Live() != 0 {
		t.Errorf("live %d after Free; want 0: the ledger lets go at once", lg.Live())
	}
	k3.end() // out of order: k2 still runs
	time.Sleep(20 * time.Millisecond)
	if m.inUse() != 1 {
		t.Fatalf("memory freed while kernel k2 still runs")
	}
	k2.end()
	eventually(t, "the link's memory freed after its last kernel ended", func() bool { return m.inUse() == 0 })
	if m.frees != 1 {
		t.Errorf("%d frees; want 1", m.frees)
	}
}

func TestSecondFreeRefused(t *testing.T) {
	m := &memory{}
	lg := NewLedger(m, cpus{})
	id := p2pqueue.NewLinkID(7, p2pqueue.RoleSteal, 0, 1)
	l, _, err := lg.New(0, 1, 16, 64, id)
	if err != nil {
		t.Fatal(err)
	}
	if err := lg.Free(l); err != nil {
		t.Fatal(err)
	}
	err = lg.Free(l)
	if !errors.Is(err, extid.ErrNotALink) {
		t.Fatalf("second Free: %v; want extid.ErrNotALink", err)
	}
	if want := fmt.Sprintf("%v: link %v", extid.ErrNotALink, id); err.Error() != want {
		t.Errorf("second Free: %q; want %q", err, want)
	}
	if m.frees != 1 {
		t.Errorf("%d frees; want 1", m.frees)
	}
	// A link another ledger made is refused too, and Uses passes it over.
	other, _, err := NewLedger(m, cpus{}).New(0, 1, 16, 64, id)
	if err != nil {
		t.Fatal(err)
	}
	lg.Uses(newKernel(), []*p2pqueue.Link{other})
	if err := lg.Free(other); !errors.Is(err, extid.ErrNotALink) || lg.Live() != 0 {
		t.Errorf("Free of another ledger's link: %v, live %d; want extid.ErrNotALink, 0", err, lg.Live())
	}
}

func TestNewRefusals(t *testing.T) {
	m := &memory{}
	lg := NewLedger(m, cpus{})
	if _, _, err := lg.New(p2pqueue.Host, p2pqueue.Host, 16, 64, 0); err == nil {
		t.Error("a link from the host to the host was made")
	}
	if _, _, err := lg.New(0, 1, 3, 64, 0); !errors.Is(err, p2pqueue.ErrBadCapacity) {
		t.Errorf("capacity 3: %v; want ErrBadCapacity", err)
	}
	if _, _, err := (&Ledger{mem: &memory{failAt: 1}, topo: cpus{}}).New(0, 1, 16, 64, 0); !errors.Is(err, errNoMemory) {
		t.Errorf("failed Alloc: %v", err)
	}
	short := &memory{failAt: 1, short: true}
	if _, _, err := NewLedger(short, cpus{}).New(0, 1, 16, 64, 0); !errors.Is(err, p2pqueue.ErrRegionTooSmall) || short.inUse() != 0 {
		t.Errorf("failed Init: %v, %d regions in use; want ErrRegionTooSmall, 0", err, short.inUse())
	}
	if lg.Live() != 0 || m.inUse() != 0 {
		t.Errorf("live %d, in use %d after refusals; want 0, 0", lg.Live(), m.inUse())
	}
}

// fanIn is a (0 → 2, 1 → 2, 2 → 3, 2 → exit-less 4) graph: stage 2 is
// fed by two stages, stages 3 and 4 are exits.
var (
	fanIn = []Stage{
		{Name: "a", Device: 0, Capacity: 16, SlotSize: 64},
		{Name: "b", Device: 1, Capacity: 32, SlotSize: 128},
		{Name: "c", Device: 1, Capacity: 64, SlotSize: 64},
		{Name: "d", Device: 0, Capacity: 16, SlotSize: 192},
		{Name: "e", Device: 2, Capacity: 16, SlotSize: 64},
	}
	fanInNext = [][]int{{2}, {2}, {3, 4}, nil, nil}
)

func TestMake(t *testing.T) {
	m := &memory{}
	lg := NewLedger(m, cpus{})
	s, err := lg.Make(9, fanIn, fanInNext)
	if err != nil {
		t.Fatal(err)
	}
	const want = 5 + 4 + 2 // ingresses, edges, egresses
	if lg.Live() != want || m.inUse() != want {
		t.Fatalf("live %d, in use %d; want %d", lg.Live(), m.inUse(), want)
	}
	for i, st := range fanIn {
		l := s.In[i].Link
		if l.Config().LinkID != p2pqueue.NewLinkID(9, p2pqueue.RoleIn, i, 0) || int(l.Cap()) != st.Capacity || int(l.Config().SlotSize) != st.SlotSize {
			t.Errorf("stage %d ingress: %v, %d slots of %d", i, l.Config().LinkID, l.Cap(), l.Config().SlotSize)
		}
		if s.In[i].At.Kind != p2pqueue.LinkIngress || s.In[i].At.Device != st.Device {
			t.Errorf("stage %d ingress placed %v", i, s.In[i].At)
		}
		for k, j := range fanInNext[i] {
			o := s.Out[i][k]
			if o.Link.Config().LinkID != p2pqueue.NewLinkID(9, p2pqueue.RoleOut, i, j) || int(o.Link.Config().SlotSize) != fanIn[j].SlotSize || o.At.Device != fanIn[j].Device {
				t.Errorf("link %d → %d: %v, slot size %d, placed %v; want the consumer's sizes and device", i, j, o.Link.Config().LinkID, o.Link.Config().SlotSize, o.At)
			}
		}
		e := s.Egress[i]
		if exit := len(fanInNext[i]) == 0; exit != (e.Link != nil) {
			t.Fatalf("stage %d: egress %v; exit %v", i, e.Link, exit)
		}
		if e.Link != nil && (e.Link.Config().LinkID != p2pqueue.NewLinkID(9, p2pqueue.RoleEgress, i, 0) || e.Link.Doorbell() == nil || e.At.Kind != p2pqueue.LinkEgress) {
			t.Errorf("stage %d egress: %v, doorbell %v, placed %v", i, e.Link.Config().LinkID, e.Link.Doorbell(), e.At)
		}
	}
	in, out := s.Kernel(2)
	if len(in) != 3 || in[0] != s.Out[0][0].Link || in[1] != s.Out[1][0].Link || in[2] != s.In[2].Link {
		t.Errorf("stage 2 reads %v; want a's link, b's link, its ingress", in)
	}
	if len(out) != 2 || out[0] != s.Out[2][0].Link || out[1] != s.Out[2][1].Link {
		t.Errorf("stage 2 writes %v; want its links to d and e", out)
	}
	in, out = s.Kernel(3)
	if len(in) != 2 || in[0] != s.Out[2][0].Link || in[1] != s.In[3].Link || len(out) != 1 || out[0] != s.Egress[3].Link {
		t.Errorf("stage 3 reads %v, writes %v; want c's link and its ingress, its egress", in, out)
	}
	in, _ = s.Kernel(0)
	if len(in) != 1 || in[0] != s.In[0].Link {
		t.Errorf("stage 0 reads %v; want its ingress alone", in)
	}
	lg.FreeSet(s)
	if lg.Live() != 0 || m.inUse() != 0 {
		t.Errorf("after FreeSet: live %d, in use %d; want 0, 0", lg.Live(), m.inUse())
	}
}

// A Make that fails at any link gives back every link it made, and names
// the one it could not make.
func TestMakeFailureGivesBackAll(t *testing.T) {
	names := []string{ // the links in the order Make makes them
		`stage "a" ingress`, `stage "b" ingress`, `stage "c" ingress`, `stage "d" ingress`, `stage "e" ingress`,
		`link "a" → "c"`, `link "b" → "c"`, `link "c" → "d"`, `link "c" → "e"`,
		`stage "d" egress`, `stage "e" egress`,
	}
	for _, short := range []bool{false, true} {
		for n := 1; n <= len(names); n++ {
			m := &memory{failAt: n, short: short}
			lg := NewLedger(m, cpus{})
			s, err := lg.Make(3, fanIn, fanInNext)
			want := p2pqueue.ErrRegionTooSmall
			if !short {
				want = errNoMemory
			}
			if !errors.Is(err, want) || !strings.HasPrefix(err.Error(), "ringactor: "+names[n-1]+": ") {
				t.Errorf("Alloc %d fails (short %v): %v; want %v naming %s", n, short, err, want, names[n-1])
			}
			if lg.Live() != 0 || m.inUse() != 0 || m.allocs != n {
				t.Errorf("Alloc %d fails (short %v): live %d, in use %d, %d allocs; want 0, 0, %d", n, short, lg.Live(), m.inUse(), m.allocs, n)
			}
			if s.In != nil || s.Out != nil || s.Egress != nil {
				t.Errorf("Alloc %d fails: Make returned links %+v", n, s)
			}
			lg.FreeSet(s) // a failed Make's zero Set frees nothing
		}
	}
}
