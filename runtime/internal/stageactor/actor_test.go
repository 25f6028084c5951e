package stageactor

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	rk "github.com/ringactor/ringactor/ringkernel"
)

// A control message reaches Receive, which gives the kernel its command
// and answers a request with the stage's status, or the error.
func TestControlAnswered(t *testing.T) {
	s, k := &fakeStage{}, &fakeKernel{state: rk.Active}
	a, pid := spawn(t, s, k)
	for _, m := range []any{stats{}, activate{}, &activate{}, stop{drain: true}} {
		if got, err := ask(t, a, pid, m); err != nil || got != "stats" {
			t.Errorf("%T%+v answered %v, %v; want the stage's status", m, m, got, err)
		}
	}
	if got := k.got(); !reflect.DeepEqual(got, []string{"activate", "activate"}) {
		t.Errorf("kernel commands %v, want two activates (stats asks nothing, stop is the stage's)", got)
	}
	if got := s.got().stops; !reflect.DeepEqual(got, []bool{true}) {
		t.Errorf("stage stops %v, want one draining", got)
	}
	k.err = errKernel
	if got, err := ask(t, a, pid, activate{}); err != nil || got != errKernel {
		t.Errorf("activate with a failing kernel answered %v, %v; want its error", got, err)
	}
	if len(s.got().posted) != 0 {
		t.Errorf("control messages reached the ingress: %v", s.got().posted)
	}
}

// A steal is answered through the protocol's Stolen with what the kernel
// moved.
func TestStealAnswered(t *testing.T) {
	s, k := &fakeStage{}, &fakeKernel{moved: 3, err: errKernel}
	a, pid := spawn(t, s, k)
	got, err := ask(t, a, pid, steal{n: 5, to: 1})
	if err != nil || got != (stolen{3, errKernel}) {
		t.Fatalf("steal answered %v, %v; want stolen{3, kernel says no}", got, err)
	}
	if k.stealAt != [2]int{5, 1} {
		t.Errorf("kernel asked to steal %v, want [5 1]", k.stealAt)
	}
}

// A control message the actor does not act on (None) is taken, not
// answered, and asks nothing of the kernel; one sent without a sender is
// done and not answered.
func TestControlNotAnswered(t *testing.T) {
	s, k := &fakeStage{}, &fakeKernel{}
	a, pid := spawn(t, s, k)
	_, err := a.sys.Root.RequestFuture(pid, faulted{}, 100*time.Millisecond).Result()
	if !errors.Is(err, actor.ErrTimeout) {
		t.Errorf("faulted answered (%v); want no answer", err)
	}
	a.sys.Root.Send(pid, activate{})
	eventually(t, "a sent activate reaches the kernel", func() bool { return len(k.got()) == 1 })
	if len(s.got().posted) != 0 {
		t.Errorf("control messages reached the ingress: %v", s.got().posted)
	}
}

// An actor stopped through protoactor stops its running kernel, as a Stop
// would, unless its pipeline is closing (Close ends the kernel then) or
// the kernel has ended.
func TestStoppingStopsKernel(t *testing.T) {
	for _, c := range []struct {
		name    string
		state   rk.State
		closing bool
		want    []bool
	}{
		{"running", rk.Active, false, []bool{false}},
		{"closing", rk.Active, true, nil},
		{"ended", rk.Terminated, false, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, k := &fakeStage{closing: c.closing}, &fakeKernel{state: c.state}
			a, pid := spawn(t, s, k)
			a.sys.Root.StopFuture(pid).Wait()
			if got := s.got().stops; !reflect.DeepEqual(got, c.want) {
				t.Errorf("stops %v, want %v", got, c.want)
			}
		})
	}
}
