package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ringactor/ringactor/p2pqueue"
	rk "github.com/ringactor/ringactor/ringkernel"
)

// kernel is a ring kernel as a test sees it: it logs each command it is
// given, in the order the stages were given them.
type kernel struct {
	name      string
	log       *[]string
	state     rk.State
	terminate error // what Terminate returns
	activate  error // what Activate returns
	done      chan struct{}
	abandoned bool
	// for the watchdog: a stuck heartbeat (else it goes round at each
	// look) and the messages queued
	stuck  time.Time
	queued int
}

func (k *kernel) Status() rk.Status {
	hb := k.stuck
	if hb.IsZero() {
		hb = time.Now()
	}
	return rk.Status{State: k.state, Heartbeat: hb, InQueued: []int{k.queued}}
}

func (k *kernel) Activate(context.Context) error {
	*k.log = append(*k.log, k.name+" activate")
	if k.activate == nil {
		k.state = rk.Active
	}
	return k.activate
}

func (k *kernel) Terminate(_ context.Context, drain bool) error {
	cmd := " terminate"
	if drain {
		cmd = " drain"
	}
	*k.log = append(*k.log, k.name+cmd)
	return k.terminate
}

func (k *kernel) Done() <-chan struct{} { return k.done }
func (k *kernel) Abandoned() bool       { return k.abandoned }
func (k *kernel) Fault(cause string)    { *k.log = append(*k.log, k.name+" fault: "+cause) }

// pipeline is stages named a, b, c, ... in graph next, each Active, with
// a log of what they were told; the last stage with no next is an exit.
func pipeline(next [][]int) (*Stages, []*kernel, *[]string) {
	log := &[]string{}
	ss := &Stages{Next: next, Faulted: func() bool { return false }}
	ss.Refuse = func(i int, stop bool) {
		*log = append(*log, fmt.Sprintf("%s refuse stop=%v", ss.List[i].Name, stop))
	}
	ss.Seal = func(i int) { *log = append(*log, ss.List[i].Name+" seal") }
	var ks []*kernel
	for i := range next {
		k := &kernel{name: string(rune('a' + i)), log: log, state: rk.Active, done: make(chan struct{})}
		ks = append(ks, k)
		ss.List = append(ss.List, Stage{Name: k.name, Kernel: k, Exit: len(next[i]) == 0})
	}
	return ss, ks, log
}

var chain4 = [][]int{{1}, {2}, {3}, nil}

func lines(s ...string) []string { return s }

// A Stop ends the stage and those upstream of it, in graph order: all
// refuse first (marked stopped), then all are sealed, then the idle ones
// are activated to drain, then each ends; the stages after it are not
// told anything.
func TestStopTellsTheUpstreamInOrder(t *testing.T) {
	cases := []struct {
		name    string
		next    [][]int
		at      int
		drain   bool
		faulted bool
		idle    []int
		want    []string
	}{
		{"chain, drain, one idle", chain4, 2, true, false, []int{1}, lines(
			"a refuse stop=true", "b refuse stop=true", "c refuse stop=true", "a seal", "b seal", "c seal",
			"b activate", "a drain", "b drain", "c drain")},
		{"chain, no drain: no activation", chain4, 1, false, false, []int{0}, lines(
			"a refuse stop=true", "b refuse stop=true", "a seal", "b seal", "a terminate", "b terminate")},
		{"chain, drain after a fault: no activation, still a drain", chain4, 1, true, true, []int{0}, lines(
			"a refuse stop=true", "b refuse stop=true", "a seal", "b seal", "a drain", "b drain")},
		{"the first stage alone", chain4, 0, true, false, nil, lines("a refuse stop=true", "a seal", "a drain")},
		{"diamond, one side", [][]int{{2, 1}, {3}, {3}, nil}, 2, false, false, nil, lines(
			"a refuse stop=true", "c refuse stop=true", "a seal", "c seal", "a terminate", "c terminate")},
		{"diamond, the join", [][]int{{2, 1}, {3}, {3}, nil}, 3, true, false, []int{2}, lines(
			"a refuse stop=true", "b refuse stop=true", "c refuse stop=true", "d refuse stop=true",
			"a seal", "b seal", "c seal", "d seal", "c activate", "a drain", "b drain", "c drain", "d drain")},
	}
	for _, c := range cases {
		ss, ks, log := pipeline(c.next)
		ss.Faulted = func() bool { return c.faulted }
		for _, i := range c.idle {
			ks[i].state = rk.Idle
		}
		if err := ss.Stop(context.Background(), c.at, c.drain); err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
		if !slices.Equal(*log, c.want) {
			t.Errorf("%s: told\n  %s\nwant\n  %s", c.name, strings.Join(*log, "\n  "), strings.Join(c.want, "\n  "))
		}
	}
}

// A Stop of a stage another Stop or a Close is already ending waits for
// that; other errors name the stage.
func TestStopErrors(t *testing.T) {
	ctx := context.Background()
	ss, ks, _ := pipeline(chain4)
	ks[0].terminate = rk.ErrTransition
	close(ks[0].done)
	if err := ss.Stop(ctx, 1, false); err != nil {
		t.Fatalf("a stage already ending: %v", err)
	}

	ss, ks, _ = pipeline(chain4)
	ks[0].terminate = rk.ErrTransition // and it does not end
	ks[1].terminate = errors.New("boom")
	ks[1].state, ks[1].activate = rk.Idle, errors.New("no")
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	err := ss.Stop(cctx, 1, true)
	for _, want := range []string{
		`ringactor: stage "b" was deactivated and could not be activated to drain: no`,
		`ringactor: stopping stage "a": context canceled`,
		`ringactor: stopping stage "b": boom`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v; want it to say %q", err, want)
		}
	}
	if !errors.Is(err, context.Canceled) {
		t.Errorf("error %v does not wrap ctx's", err)
	}
}

// A Close ends every stage in stage order; a stage cut off (the faulted
// one, or one abandoned) ends the drain and has what it held counted,
// once; a cut-off exit is reported.
func TestCloseTellsEveryStage(t *testing.T) {
	shut := lines("a refuse stop=false", "b refuse stop=false", "c refuse stop=false", "d refuse stop=false",
		"a seal", "b seal", "c seal", "d seal")
	cases := []struct {
		name      string
		next      [][]int
		drain     bool
		faulted   string
		idle      int // -1: none
		abandoned int // -1: none
		wantLog   []string
		wantCut   []int
		wantExit  bool
	}{
		{"drain", chain4, true, "", 2, -1, append(slices.Clone(shut),
			"c activate", "a drain", "b drain", "c drain", "d drain"), nil, false},
		{"no drain", chain4, false, "", 2, -1, append(slices.Clone(shut),
			"a terminate", "b terminate", "c terminate", "d terminate"), nil, false},
		{"drain, b abandoned: c and d do not drain", chain4, true, "", -1, 1, append(slices.Clone(shut),
			"a drain", "b drain", "c terminate", "d terminate"), []int{1}, false},
		{"drain after b faulted: none drains", chain4, true, "b", 2, -1, append(slices.Clone(shut),
			"a terminate", "b terminate", "c terminate", "d terminate"), []int{1}, false},
		{"the exit abandoned", chain4, true, "", -1, 3, append(slices.Clone(shut),
			"a drain", "b drain", "c drain", "d drain"), []int{3}, true},
		{"graph: an exit of two faulted", [][]int{{1, 2}, nil, {3}, nil}, false, "b", -1, -1, append(slices.Clone(shut),
			"a terminate", "b terminate", "c terminate", "d terminate"), []int{1}, true},
	}
	for _, c := range cases {
		ss, ks, log := pipeline(c.next)
		if c.idle >= 0 {
			ks[c.idle].state = rk.Idle
		}
		if c.abandoned >= 0 {
			ks[c.abandoned].abandoned = true
		}
		var cut []int
		exit, errs := ss.Close(context.Background(), c.drain, c.faulted, func(i int) func(p2pqueue.Header) {
			cut = append(cut, i)
			return func(p2pqueue.Header) { t.Errorf("%s: a message counted; the links are empty", c.name) }
		})
		if len(errs) > 0 {
			t.Errorf("%s: %v", c.name, errs)
		}
		if !slices.Equal(*log, c.wantLog) || !slices.Equal(cut, c.wantCut) || exit != c.wantExit {
			t.Errorf("%s: told\n  %s\ncut %v, exit %v; want\n  %s\ncut %v, exit %v", c.name,
				strings.Join(*log, "\n  "), cut, exit, strings.Join(c.wantLog, "\n  "), c.wantCut, c.wantExit)
		}
	}
}

// hostLink is a link in host memory holding messages with ids.
func hostLink(t *testing.T, ids ...uint64) *p2pqueue.Link {
	t.Helper()
	l, err := p2pqueue.NewHostQueue(p2pqueue.Config{Capacity: 8, SlotSize: 64})
	if err != nil {
		t.Fatal(err)
	}
	fill(t, l, ids)
	return l
}

func fill(t *testing.T, l *p2pqueue.Link, ids []uint64) {
	t.Helper()
	pr, err := l.Producer()
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		if err := pr.TryEnqueue(&p2pqueue.Message{Header: p2pqueue.Header{ID: id, Origin: uint32(id % 3)}}); err != nil {
			t.Fatal(err)
		}
	}
}

// devMem is device memory the host reaches only by copies.
type devMem struct{ b []byte }

func (d *devMem) CopyIn(off int, p []byte) error  { copy(d.b[off:], p); return nil }
func (d *devMem) CopyOut(p []byte, off int) error { copy(p, d.b[off:]); return nil }

// deviceLink is a link in device memory holding n messages.
func deviceLink(t *testing.T, n int) *p2pqueue.Link {
	t.Helper()
	cfg := p2pqueue.Config{Capacity: 8, SlotSize: 64}
	size, err := cfg.RegionSize()
	if err != nil {
		t.Fatal(err)
	}
	mem, err := p2pqueue.NewHostRegion(size)
	if err != nil {
		t.Fatal(err)
	}
	l, err := p2pqueue.Init(p2pqueue.Region{Kind: p2pqueue.DeviceMemory, Device: 1, Size: size, Access: &devMem{mem.Bytes}}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	dev, err := p2pqueue.Attach(mem) // the device's own view
	if err != nil {
		t.Fatal(err)
	}
	fill(t, dev, make([]uint64, n))
	return l
}

// What a cut-off stage held is counted from head to tail of each of its
// links, in order, with ids where the host can read them, once.
func TestCloseCountsWhatACutOffStageHeld(t *testing.T) {
	ss, _, _ := pipeline(chain4)
	ss.List[1].Held = []*p2pqueue.Link{hostLink(t, 7, 8), hostLink(t), hostLink(t, 9)}
	ss.List[2].Held = []*p2pqueue.Link{hostLink(t, 10), deviceLink(t, 3)}
	ss.List[1].Kernel.(*kernel).abandoned = true
	ss.List[2].Kernel.(*kernel).abandoned = true
	var dead []string
	_, errs := ss.Close(context.Background(), true, "", func(i int) func(p2pqueue.Header) {
		return func(h p2pqueue.Header) { dead = append(dead, fmt.Sprintf("%s:%d/%d", ss.List[i].Name, h.ID, h.Origin)) }
	})
	want := lines("b:7/1", "b:8/2", "b:9/0", "c:10/1", "c:0/0", "c:0/0", "c:0/0")
	if !slices.Equal(dead, want) {
		t.Errorf("counted %v; want %v", dead, want)
	}
	if len(errs) != 1 || !errors.Is(errs[0], p2pqueue.ErrNotHostVisible) {
		t.Errorf("errors %v; want the device link's ErrNotHostVisible", errs)
	}
}

// A fault makes every stage refuse messages, not as a Stop, and cuts off
// its stage's kernel.
func TestFault(t *testing.T) {
	ss, _, log := pipeline([][]int{{1}, {2}, nil})
	ss.Fault(1, "hung")
	want := lines("a refuse stop=false", "b refuse stop=false", "c refuse stop=false", "b fault: hung")
	if !slices.Equal(*log, want) {
		t.Errorf("told %v; want %v", *log, want)
	}
}

// The watchdog faults the stage that holds work and does not go round,
// while another does, and names why.
func TestWatchFaultsAHungStage(t *testing.T) {
	ss, ks, _ := pipeline([][]int{{1}, nil})
	ks[1].stuck, ks[1].queued = time.Now(), 5
	ks[0].queued = 1
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var looks atomic.Uint64
	passes := 0
	hung, cause := -1, ""
	ss.Watch(ctx, 200*time.Millisecond, func() { passes++ }, &looks, func(i int, c string) { hung, cause = i, c })
	if hung != 1 || !strings.Contains(cause, "with 5 messages queued (HangAfter 200ms): its stage function has not returned") {
		t.Fatalf("faulted stage %d: %q; want stage 1, hung with 5 queued", hung, cause)
	}
	if passes == 0 || looks.Load() != uint64(passes-1) {
		t.Errorf("%d passes, %d looks; want a look counted for each pass but the last", passes, looks.Load())
	}
}

// The watchdog ends with its ctx, faulting nothing while the stages go
// round.
func TestWatchEndsWithCtx(t *testing.T) {
	ss, ks, _ := pipeline([][]int{{1}, nil})
	ks[0].queued, ks[1].queued = 3, 3
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()
	var looks atomic.Uint64
	ss.Watch(ctx, 20*time.Millisecond, func() {}, &looks, func(i int, c string) { t.Errorf("stage %d faulted: %s", i, c) })
	if looks.Load() == 0 {
		t.Error("no looks")
	}
}

func TestAwaitPump(t *testing.T) {
	done := make(chan struct{})
	close(done)
	if err := AwaitPump(context.Background(), done, func() { t.Error("stopped a pump that had ended") }); err != nil {
		t.Fatal(err)
	}
	done = make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := AwaitPump(ctx, done, func() { close(done) })
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "ringactor: results not all delivered") {
		t.Fatalf("%v; want results not all delivered, wrapping ctx's error", err)
	}
}

func TestIdle(t *testing.T) {
	n := 0
	if err := Idle(context.Background(), func() bool { n++; return n > 3 }); err != nil || n != 4 {
		t.Fatalf("%v after %d polls; want nil after 4", err, n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if err := Idle(ctx, func() bool { return false }); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("%v; want ctx's error", err)
	}
}

func TestTeardownIsBounded(t *testing.T) {
	got := make(chan time.Duration, 1)
	Teardown(func(ctx context.Context) {
		d, _ := ctx.Deadline()
		got <- time.Until(d)
	})
	if d := <-got; d <= 0 || d > FaultTeardown {
		t.Fatalf("teardown's ctx ends in %v; want within FaultTeardown", d)
	}
}

// A Dog started on runs its watch until Stop, which waits for it; one
// started off closes Done at once; Stop of one never started returns.
func TestDog(t *testing.T) {
	d := NewDog()
	ended := false
	d.Start(true, func(ctx context.Context) { <-ctx.Done(); ended = true })
	d.Stop()
	if !ended {
		t.Fatal("Stop returned before the watch ended")
	}
	<-d.Done()
	off := NewDog()
	off.Start(false, func(context.Context) { t.Error("a dog started off ran its watch") })
	<-off.Done()
	off.Stop()
	NewDog().Stop()
}
