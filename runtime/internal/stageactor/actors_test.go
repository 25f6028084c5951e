package stageactor

import (
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/ringactor/ringactor/runtime/internal/account"
)

// refusals records a Closed's Refuse calls.
type refusals struct {
	mu      sync.Mutex
	ids     []uint64
	senders []*actor.PID
}

func (r *refusals) refuse(id uint64, sender *actor.PID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ids, r.senders = append(r.ids, id), append(r.senders, sender)
}

func (r *refusals) got() ([]uint64, []*actor.PID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]uint64(nil), r.ids...), append([]*actor.PID(nil), r.senders...)
}

// Data sent to a stage's PID after its actor stopped goes to the stage,
// shut first so that it refuses it; control messages there are dropped.
func TestOrphanToStage(t *testing.T) {
	s := &fakeStage{}
	a, pid := spawn(t, s, &fakeKernel{})
	a.sys.Root.StopFuture(pid).Wait()
	a.sys.Root.Send(pid, stats{})
	if got := s.got(); got.shut || len(got.posted) != 0 {
		t.Fatalf("a control message to the stopped actor reached the stage: %+v", got)
	}
	a.sys.Root.Send(pid, msg{ID: 1})
	a.sys.Root.RequestFuture(pid, msg{ID: 2}, time.Second)
	got := s.got()
	if !got.shut {
		t.Error("the stage was not shut")
	}
	if want := []msg{{ID: 1}, {ID: 2, Value: "request"}}; !reflect.DeepEqual(got.posted, want) {
		t.Errorf("posted %v, want %v", got.posted, want)
	}
	if len(got.senders) != 1 || got.senders[0] == nil {
		t.Errorf("request senders %v, want the future", got.senders)
	}
}

// Once retired, data sent to the PID is counted into the closed stage's
// account and refused, each message; a single one sent as a request names
// its sender. A stale stage's Retire changes nothing; after Close the
// orphans are not taken.
func TestOrphanToClosed(t *testing.T) {
	s := &fakeStage{}
	a, pid := spawn(t, s, &fakeKernel{})
	a.sys.Root.StopFuture(pid).Wait()
	var r refusals
	acct := &account.Account{}
	a.Retire(pid, &fakeStage{}, &Closed[msg]{Acct: acct, Refuse: r.refuse}) // not the stage there
	a.sys.Root.Send(pid, msg{ID: 1})
	if ids, _ := r.got(); len(ids) != 0 || len(s.got().posted) != 1 {
		t.Fatalf("a stale Retire took the PID: refused %v, stage posted %v", ids, s.got().posted)
	}
	a.Retire(pid, s, &Closed[msg]{Acct: acct, Refuse: r.refuse})
	a.sys.Root.Send(pid, &msg{ID: 5})
	a.sys.Root.RequestFuture(pid, msg{ID: 6}, time.Second)
	a.sys.Root.RequestFuture(pid, []msg{{ID: 7}, {ID: 8}}, time.Second)
	ids, senders := r.got()
	if !reflect.DeepEqual(ids, []uint64{5, 6, 7, 8}) {
		t.Errorf("refused %v, want 5 6 7 8", ids)
	}
	if len(senders) == 4 && (senders[0] != nil || senders[1] == nil || senders[2] != nil || senders[3] != nil) {
		t.Errorf("senders %v: want only the single request's", senders)
	}
	if tot := acct.Read(func() uint64 { return 0 }); tot.Sent != 4 || tot.DeadLettered != 4 {
		t.Errorf("account %+v, want 4 sent and dead-lettered", tot)
	}
	if len(s.got().posted) != 1 {
		t.Errorf("the retired stage was posted to: %v", s.got().posted)
	}
	a.Close()
	a.sys.Root.Send(pid, msg{ID: 9})
	if ids, _ := r.got(); len(ids) != 4 {
		t.Errorf("after Close refused %v", ids)
	}
}

// A forgotten stage's PID is no stage's: data sent there after its actor
// stopped reaches nothing, and the map holds no entry for it. Forget of a
// stage that is not the one there changes nothing.
func TestForget(t *testing.T) {
	s := &fakeStage{}
	a, pid := spawn(t, s, &fakeKernel{})
	if a.Len() != 1 {
		t.Fatalf("%d entries after a spawn, want 1", a.Len())
	}
	a.Forget(pid, &fakeStage{})
	if a.Len() != 1 {
		t.Fatal("Forget of another stage dropped the entry")
	}
	a.sys.Root.StopFuture(pid).Wait()
	a.Forget(pid, s)
	if a.Len() != 0 {
		t.Fatalf("%d entries after Forget, want 0", a.Len())
	}
	a.sys.Root.Send(pid, msg{ID: 1})
	if got := s.got(); got.shut || len(got.posted) != 0 {
		t.Fatalf("data to a forgotten stage's PID reached it: %+v", got)
	}
}
