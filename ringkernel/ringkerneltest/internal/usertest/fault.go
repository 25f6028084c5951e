package usertest

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ringactor/ringactor/kernels"
	"github.com/ringactor/ringactor/p2pqueue"
	rk "github.com/ringactor/ringactor/ringkernel"
)

// hangOp blocks on a message whose first float is negative until the
// current run's release is closed: a stage function that never returns, on
// purpose. Each run of the test (-count=N) gets fresh channels.
type hangChans struct{ release, entered chan struct{} }

var (
	hangOnce sync.Once
	hangNow  atomic.Pointer[hangChans]
)

func registerHang(t *testing.T) *hangChans {
	hangOnce.Do(func() {
		err := kernels.Register(kernels.Op{Name: "rk_test_hang", Go: func(_, _, in, out []float32) (int, error) {
			if len(in) > 0 && in[0] < 0 {
				h := hangNow.Load()
				h.entered <- struct{}{}
				<-h.release
			}
			return copy(out, in), nil
		}})
		if err != nil {
			t.Fatal(err)
		}
	})
	h := &hangChans{release: make(chan struct{}), entered: make(chan struct{}, 16)}
	hangNow.Store(h)
	return h
}

// A kernel stuck in its stage function stops beating; the host declares it
// faulted, takes over the account of what is queued, and hears nothing more
// from it, even once the function returns.
func FaultAbandonsAHungKernel(t *testing.T, s Suite) {
	hang := registerHang(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// All four are queued before the kernel may take any, so they are one
	// batch: the one the function hangs in.
	r := s.Launch(t, rk.Stage{Name: "hang", Op: "rk_test_hang", Stateful: true}, 16, 4, false)
	for id, v := range []float32{1, -1, 2, 3} {
		if err := r.Producer().TryEnqueue(&p2pqueue.Message{Header: p2pqueue.Header{ID: uint64(id + 1)}, Payload: kernels.EncodeFloats(nil, []float32{v})}); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Kernel().Activate(ctx); err != nil {
		t.Fatal(err)
	}
	<-hang.entered
	time.Sleep(20 * time.Millisecond)
	if age := r.Kernel().Status().HeartbeatAge; age < 10*time.Millisecond {
		t.Fatalf("a hung loop still beats: heartbeat %v old", age)
	}
	r.Kernel().Fault("heartbeat stopped with work queued")
	st := r.Kernel().Status()
	if st.State != rk.Faulted || st.LastError == nil || st.LastError.Code != rk.CodeHung {
		t.Fatalf("after Fault: %s, %v", st.State, st.LastError)
	}
	// The batch the function hangs in was never released nor its results
	// published: all four are still in the in-link, for the host to
	// account for.
	hs, err := r.In().Queued()
	if err != nil {
		t.Fatal(err)
	}
	var ids []uint64
	for _, h := range hs {
		ids = append(ids, h.ID)
	}
	if len(ids) != 4 || ids[0] != 1 || ids[3] != 4 || r.Out().Len() != 0 {
		t.Fatalf("queued ids %v, want [1 2 3 4]; %d results out", ids, r.Out().Len())
	}
	start := time.Now()
	if err := r.Kernel().Terminate(ctx, true); !errors.Is(err, rk.ErrFaulted) {
		t.Fatalf("Terminate of a faulted kernel: %v", err)
	}
	if err := r.Kernel().Activate(ctx); !errors.Is(err, rk.ErrFaulted) {
		t.Fatalf("Activate of a faulted kernel: %v", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("Terminate of a faulted kernel took %v", d)
	}
	// Let the function return: the loop ends (told to terminate) and its
	// dead letters are not delivered: the host already counted them.
	close(hang.release)
	select {
	case <-r.Kernel().Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the abandoned loop did not end once its function returned")
	}
	if dead := r.DeadLetters(); len(dead) != 0 {
		t.Fatalf("dead letters delivered after Fault: %v", dead)
	}
}
