package stageactor

import (
	"reflect"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// Data sent to a stage's PID goes into its ingress in the sender's
// goroutine, never to Receive: a D, a *D, a []D, and a bare value made a D.
func TestDataGoesToIngress(t *testing.T) {
	s, k := &fakeStage{}, &fakeKernel{}
	a, pid := spawn(t, s, k)
	root := a.sys.Root
	root.Send(pid, msg{ID: 1})
	root.Send(pid, &msg{ID: 2})
	root.Send(pid, []msg{{ID: 3}, {ID: 4}})
	root.Send(pid, "bare")
	want := []msg{{ID: 1}, {ID: 2}, {ID: 3}, {ID: 4}, {Value: "bare"}}
	if got := s.got().posted; !reflect.DeepEqual(got, want) { // no wait: Send has posted
		t.Errorf("posted %v, want %v", got, want)
	}
	if got := k.got(); len(got) != 0 {
		t.Errorf("data reached the kernel's commands: %v", got)
	}
}

// A single data message sent as a request becomes the stage's request
// (its sender gets the outcome); a refused one is not posted.
func TestDataRequest(t *testing.T) {
	s, k := &fakeStage{}, &fakeKernel{}
	a, pid := spawn(t, s, k)
	a.sys.Root.RequestFuture(pid, msg{ID: 7}, time.Second)
	got := s.got()
	if len(got.requests) != 1 || got.requests[0] != (msg{ID: 7}) || got.senders[0] == nil {
		t.Fatalf("requests %v from %v, want msg 7 from the future", got.requests, got.senders)
	}
	if !reflect.DeepEqual(got.posted, []msg{{ID: 7, Value: "request"}}) {
		t.Errorf("posted %v, want the request Request made", got.posted)
	}
	a.sys.Root.RequestFuture(pid, []msg{{ID: 8}, {ID: 9}}, time.Second) // a batch is no request
	s.refuse = true
	a.sys.Root.RequestFuture(pid, &msg{ID: 10}, time.Second)
	got = s.got()
	if len(got.requests) != 2 || got.requests[1] != (msg{ID: 10}) {
		t.Errorf("requests %v, want 7 and 10", got.requests)
	}
	if want := []msg{{ID: 7, Value: "request"}, {ID: 8}, {ID: 9}}; !reflect.DeepEqual(got.posted, want) {
		t.Errorf("posted %v, want %v (the refused request not)", got.posted, want)
	}
}

// A full ingress holds the sender: the send returns once the stage has
// taken the message (its backpressure is the stage's Post).
func TestSendWaitsForIngress(t *testing.T) {
	s := &fakeStage{hold: make(chan struct{})}
	a, pid := spawn(t, s, &fakeKernel{})
	sent := make(chan struct{})
	go func() {
		a.sys.Root.Send(pid, &msg{ID: 1})
		close(sent)
	}()
	select {
	case <-sent:
		t.Fatal("Send returned before the stage took the message")
	case <-time.After(50 * time.Millisecond):
	}
	close(s.hold)
	<-sent
	if got := s.got().posted; len(got) != 1 {
		t.Errorf("posted %v, want msg 1", got)
	}
}

// countStage counts posts, allocating nothing.
type countStage struct {
	fakeStage
	n int
}

func (c *countStage) Post(msg) { c.n++ }

// The common case, one D or *D, costs the mailbox no allocation.
func TestPostAllocatesNothing(t *testing.T) {
	s := &countStage{}
	m := &mailbox[msg]{Mailbox: actor.Unbounded()(), p: &proto, s: s}
	d := &msg{ID: 1}
	if n := testing.AllocsPerRun(100, func() { m.PostUserMessage(d) }); n != 0 {
		t.Errorf("posting a *D allocates %v times, want 0", n)
	}
	if s.n == 0 {
		t.Error("nothing posted")
	}
}

// UserMessageCount counts the control messages waiting and the data in
// the ingress.
func TestUserMessageCount(t *testing.T) {
	s := &fakeStage{queued: 5}
	m := &mailbox[msg]{Mailbox: actor.Unbounded()(), p: &proto, s: s}
	m.RegisterHandlers(nil, idle{}) // nothing runs: the control message waits
	m.PostUserMessage(stats{})
	m.PostUserMessage(msg{ID: 1})
	if got := m.UserMessageCount(); got != 6 {
		t.Errorf("UserMessageCount %d, want 1 control + 5 queued", got)
	}
}

// idle is a dispatcher that never runs the mailbox.
type idle struct{}

func (idle) Schedule(func()) {}
func (idle) Throughput() int { return 1 }
