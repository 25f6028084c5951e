package stageactor

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	rk "github.com/ringactor/ringactor/ringkernel"
)

// The tests' messages: runtime's shapes, made small.
type (
	msg struct {
		ID    uint64
		Value any
	}
	activate struct{}
	stop     struct{ drain bool }
	stats    struct{}
	steal    struct{ n, to int }
	faulted  struct{}
	stolen   struct {
		moved int
		err   error
	}
)

var proto = Protocol[msg]{
	Command: func(m any) (Command, bool) {
		switch m := m.(type) {
		case activate, *activate:
			return Command{Op: Activate}, true
		case stop:
			return Command{Op: Stop, Drain: m.drain}, true
		case stats:
			return Command{Op: Stats}, true
		case steal:
			return Command{Op: Steal, N: m.n, To: m.to}, true
		case faulted:
			return Command{Op: None}, true
		}
		return Command{}, false
	},
	Value:  func(v any) msg { return msg{Value: v} },
	Stolen: func(moved int, err error) any { return stolen{moved, err} },
	ID:     func(d msg) uint64 { return d.ID },
}

// fakeStage records what its actor asks of it.
type fakeStage struct {
	mu       sync.Mutex
	posted   []msg
	requests []msg
	senders  []*actor.PID
	stops    []bool
	refuse   bool          // Request refuses
	hold     chan struct{} // Post waits for it when not nil
	closing  bool
	shut     bool
	queued   int
}

func (s *fakeStage) Post(d msg) {
	if s.hold != nil {
		<-s.hold
	}
	s.PostAll([]msg{d})
}

func (s *fakeStage) PostAll(ds []msg) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.posted = append(s.posted, ds...)
}

func (s *fakeStage) Request(d msg, sender *actor.PID) (msg, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests, s.senders = append(s.requests, d), append(s.senders, sender)
	d.Value = "request"
	return d, !s.refuse
}

func (s *fakeStage) Stop(_ context.Context, drain bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stops = append(s.stops, drain)
	return nil
}

func (s *fakeStage) Closing() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closing
}

func (s *fakeStage) Shut() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.shut = true
}

func (s *fakeStage) Answer() any { return "stats" }
func (s *fakeStage) Queued() int { return s.queued }

// record is what a fakeStage has recorded.
type record struct {
	posted, requests []msg
	senders          []*actor.PID
	stops            []bool
	shut             bool
}

// got is a copy of what s has recorded, under its lock.
func (s *fakeStage) got() record {
	s.mu.Lock()
	defer s.mu.Unlock()
	return record{posted: append([]msg(nil), s.posted...), requests: append([]msg(nil), s.requests...),
		senders: append([]*actor.PID(nil), s.senders...), stops: append([]bool(nil), s.stops...), shut: s.shut}
}

// fakeKernel records the commands it is given.
type fakeKernel struct {
	mu      sync.Mutex
	calls   []string
	err     error // every command's
	moved   int
	state   rk.State
	stealAt [2]int
}

func (k *fakeKernel) call(c string) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.calls = append(k.calls, c)
	return k.err
}

func (k *fakeKernel) Activate(context.Context) error   { return k.call("activate") }
func (k *fakeKernel) Deactivate(context.Context) error { return k.call("deactivate") }
func (k *fakeKernel) Steal(_ context.Context, n, to int) (int, error) {
	err := k.call("steal")
	k.mu.Lock()
	defer k.mu.Unlock()
	k.stealAt = [2]int{n, to}
	return k.moved, err
}
func (k *fakeKernel) Status() rk.Status {
	k.mu.Lock()
	defer k.mu.Unlock()
	return rk.Status{State: k.state}
}

func (k *fakeKernel) got() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]string(nil), k.calls...)
}

var errKernel = errors.New("kernel says no")

// spawn starts a stage actor for s and k in a new actor system.
func spawn(t *testing.T, s *fakeStage, k *fakeKernel) (*Actors[msg], *actor.PID) {
	t.Helper()
	sys := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
		return slog.New(slog.NewTextHandler(io.Discard, nil))
	}))
	t.Cleanup(sys.Shutdown)
	a := New(sys, &proto)
	t.Cleanup(a.Close)
	pid, err := a.Spawn("p/"+t.Name(), s, k)
	if err != nil {
		t.Fatal(err)
	}
	return a, pid
}

// ask sends m to pid as a request and returns the answer.
func ask(t *testing.T, a *Actors[msg], pid *actor.PID, m any) (any, error) {
	t.Helper()
	return a.sys.Root.RequestFuture(pid, m, 2*time.Second).Result()
}

// eventually waits up to 2 s for ok.
func eventually(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for end := time.Now().Add(2 * time.Second); !ok(); {
		if time.Now().After(end) {
			t.Fatalf("after 2 s: %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}
