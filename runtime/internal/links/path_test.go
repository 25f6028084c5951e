package links

import (
	"errors"
	"strings"
	"testing"

	"github.com/ringactor/ringactor/p2pqueue"
	rk "github.com/ringactor/ringactor/ringkernel"
)

// A flagged Path makes every link of the graph flagged, each with the
// slots that hold the payload its consumer's SlotSize holds indexed (twice
// the bytes); the default makes them indexed, of SlotSize. New stays
// indexed.
func TestMakeInPathFormat(t *testing.T) {
	for _, f := range []p2pqueue.Format{p2pqueue.FormatIndexed, p2pqueue.FormatFlagged} {
		m := &memory{}
		lg := NewLedger(m, cpus{})
		stages := append([]Stage(nil), fanIn...)
		for i := range stages {
			stages[i].Path = Path{Links: f, Loop: rk.LoopWarp}
		}
		s, err := lg.Make(1, stages, fanInNext)
		if err != nil {
			t.Fatal(err)
		}
		check := func(what string, l *p2pqueue.Link, consumer Stage) {
			c := l.Config()
			if l.Format() != f || c.Format != f || c.PayloadCap() != consumer.SlotSize-p2pqueue.SlotHeaderSize {
				t.Errorf("%s %s: %s, %d-byte slots carrying %d bytes; want %s carrying %d", f, what, l.Format(), c.SlotSize, c.PayloadCap(), f, consumer.SlotSize-p2pqueue.SlotHeaderSize)
			}
		}
		for i, st := range stages {
			check("ingress", s.In[i].Link, st)
			for k, j := range fanInNext[i] {
				check("edge", s.Out[i][k].Link, stages[j])
			}
			if e := s.Egress[i].Link; e != nil {
				check("egress", e, st)
			}
		}
		lg.FreeSet(s)
		l, _, err := lg.New(0, 1, 16, 64, 0)
		if err != nil || l.Format() != p2pqueue.FormatIndexed {
			t.Fatalf("New: %v, %v; want an indexed link", l, err)
		}
		lg.Free(l)
		if lg.Live() != 0 || m.inUse() != 0 {
			t.Errorf("live %d, in use %d after FreeSet; want 0, 0", lg.Live(), m.inUse())
		}
	}
}

// Check refuses an unknown format or loop, and a SlotSize whose flagged
// links would be over p2pqueue.MaxSlotSize, naming the fix.
func TestCheckPath(t *testing.T) {
	for _, c := range []struct {
		s    Stage
		err  error
		says string
	}{
		{Stage{Name: "a", Capacity: 16, SlotSize: 64, Path: Path{Links: 5}}, p2pqueue.ErrBadFormat, "use p2pqueue.FormatIndexed (the default) or FormatFlagged"},
		{Stage{Name: "a", Capacity: 16, SlotSize: 64, Path: Path{Loop: 3}}, nil, "DataPath.Loop LoopVariant(3): unknown device loop; use ringkernel.LoopClassic (the default), LoopWarp or LoopWarpPrefetch"},
		{Stage{Name: "a", Capacity: 16, SlotSize: p2pqueue.MaxSlotSize/2 + 64, Path: Path{Links: p2pqueue.FormatFlagged}}, p2pqueue.ErrBadSlotSize, "use a SlotSize of at most 8388608, or indexed links"},
	} {
		err := Check(c.s, rk.Device{}, 0, 1024, 256)
		if err == nil || (c.err != nil && !errors.Is(err, c.err)) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("Check(%+v): %v; want %v saying %q", c.s, err, c.err, c.says)
		}
	}
	ok := Stage{Name: "a", Capacity: 16, SlotSize: p2pqueue.MaxSlotSize / 2, Path: Path{Links: p2pqueue.FormatFlagged, Loop: rk.LoopWarp}}
	if err := Check(ok, rk.Device{}, 0, 1024, 256); err != nil {
		t.Errorf("Check(%+v): %v; want nil (the largest flagged SlotSize)", ok, err)
	}
	if got := (Path{Links: p2pqueue.FormatFlagged, Loop: rk.LoopWarp}).String(); got != "flagged links, warp loop" {
		t.Errorf("Path.String: %q", got)
	}
}
