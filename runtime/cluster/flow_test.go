package cluster

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	ra "github.com/ringactor/ringactor/runtime"
)

// A cluster pipeline is a runtime.Flow also where its stages run on
// another node: a request is answered when its result comes back to the
// origin, or with the dead letter when the node goes down; Idle waits for
// what is out there; PID says a remote stage's actor is not here; Start
// does nothing on a built pipeline. (internal/nodeproc/inmem runs the
// same calls on local segments.)
func TestFlowAcrossNodes(t *testing.T) {
	cp, e, dead := newTestExcursion(t, DefaultRemoteWindow)
	var sunk atomic.Int64
	cp.spec.Deliver = ra.Sink{Func: func(ra.Result) { sunk.Add(1) }}
	cp.spec.Stages = cp.segs[0].stages
	cp.byStage = map[string]*segment{"far": cp.segs[0]}
	far := upExcursion(t, cp, e)
	var f ra.Flow = cp
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	if err := f.Start(ctx); err != nil {
		t.Fatalf("Start of a built pipeline: %v", err)
	}
	if _, err := f.PID("far"); !errors.Is(err, ErrRemoteStage) {
		t.Fatalf("PID of a remote stage: %v, want ErrRemoteStage", err)
	}
	if _, err := f.PID("none"); err == nil || errors.Is(err, ErrRemoteStage) {
		t.Fatalf("PID of no stage: %v, want an error naming the stages", err)
	}

	type answer struct {
		r   ra.Result
		err error
	}
	request := func(id uint64) <-chan answer {
		ch := make(chan answer, 1)
		go func() {
			r, err := f.Request(ctx, ra.Data{ID: id, Floats: []float32{1, 2}})
			ch <- answer{r, err}
		}()
		select { // the request is out on the other node once its batch is there
		case <-far.batches:
		case <-ctx.Done():
			t.Fatal("the request's batch did not reach the segment")
		}
		return ch
	}
	wait := func(ch <-chan answer) answer {
		select {
		case a := <-ch:
			return a
		case <-ctx.Done():
			t.Fatal("the request was not answered")
			return answer{}
		}
	}

	// A result back at the origin answers its request, not the sink.
	ch := request(5)
	ictx, icancel := context.WithTimeout(ctx, 20*time.Millisecond) // one message is out: Idle can only time out
	if err := f.Idle(ictx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Idle with a message out: %v, want DeadlineExceeded", err)
	}
	icancel()
	if !e.arrive(5) {
		t.Fatal("arrive(5): not outstanding")
	}
	cp.deliver(ra.Result{ID: 5, Floats: []float32{3}})
	if a := wait(ch); a.err != nil || a.r.ID != 5 || len(a.r.Floats) != 1 || a.r.Floats[0] != 3 {
		t.Fatalf("request 5: %+v", a)
	}
	if err := f.Send(ctx, ra.Data{ID: 99, Floats: []float32{1, 2}}); err != nil { // no request: to the sink
		t.Fatal(err)
	}
	<-far.batches
	if !e.arrive(99) {
		t.Fatal("arrive(99): not outstanding")
	}
	cp.deliver(ra.Result{ID: 99})
	if n := sunk.Load(); n != 1 {
		t.Fatalf("sink got %d results, want the one that was no request", n)
	}

	// A node that goes down dead-letters the request: its caller and the
	// dead-letter subscribers hear of it.
	ch = request(6)
	why := fmt.Errorf("%w: node %q died", ErrRemoteUnreachable, "other")
	e.fail(ra.ReasonRemoteUnreachable, why)
	a := wait(ch)
	var re *ra.RequestError
	if !errors.As(a.err, &re) || re.Dead.ID != 6 || re.Dead.Reason != ra.ReasonRemoteUnreachable || !errors.Is(a.err, ErrRemoteUnreachable) {
		t.Fatalf("request 6 on a node that died: %v, want a RequestError for remote unreachable", a.err)
	}
	expectDead(t, dead, ra.ReasonRemoteUnreachable, ErrRemoteUnreachable, 6)
	if err := f.Idle(ctx); err != nil {
		t.Fatalf("Idle once every message ended: %v", err)
	}
	if st := f.Stats(); st.Sent != 3 || st.Delivered != 2 || st.DeadLettered != 1 || st.InFlight != 0 {
		t.Fatalf("account %+v, want 3 sent, 2 delivered, 1 dead-lettered", st)
	}
}
