package cuda_test

import (
	"context"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/ringactor/ringactor/cuda/cudatest"
	"github.com/ringactor/ringactor/kernels"
	"github.com/ringactor/ringactor/p2pqueue"
	rk "github.com/ringactor/ringactor/ringkernel"
	rkcuda "github.com/ringactor/ringactor/ringkernel/cuda"
)

// These tests need a GPU: they skip with the reason without one, and fail
// instead under RINGACTOR_REQUIRE_GPU=1 (the GPU bundle sets it). The
// lifecycle, counters and every built-in op run through package
// ringkernel's own suite with RINGACTOR_TEST_BACKEND=cuda.

var (
	once    sync.Once
	backend *rkcuda.Backend
	newErr  error
)

func gpu(t *testing.T) *rkcuda.Backend {
	t.Helper()
	cudatest.Driver(t)
	once.Do(func() { backend, newErr = rkcuda.New(rkcuda.Options{}) })
	if newErr != nil {
		t.Fatalf("cuda backend: %v", newErr)
	}
	return backend
}

func link(t *testing.T, b *rkcuda.Backend, kind p2pqueue.MemoryKind, capacity uint32, floats int) *p2pqueue.Link {
	t.Helper()
	cfg := p2pqueue.ConfigFor(capacity, 4*floats)
	n, err := cfg.RegionSize()
	if err != nil {
		t.Fatal(err)
	}
	r, err := b.Alloc(0, n, kind)
	if err != nil {
		t.Fatal(err)
	}
	l, err := p2pqueue.Init(r, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Free(r) })
	return l
}

// launch is rk.Launch with a cleanup that terminates the kernel before the
// cleanups registered earlier free its links.
func launch(t *testing.T, ctx context.Context, b *rkcuda.Backend, spec rk.Spec) (*rk.Kernel, error) {
	k, err := rk.Launch(ctx, b, spec)
	if err == nil {
		t.Cleanup(func() {
			c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			k.Terminate(c, false)
		})
	}
	return k, err
}

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// Two ring kernels on one GPU joined by a link in device memory: x*2, then
// +1, checked message by message against Go; nothing lost, in order.
func TestGPUTwoStagesOverADeviceMemoryLink(t *testing.T) {
	b := gpu(t)
	in := link(t, b, p2pqueue.MappedPinnedMemory, 1024, 16)
	mid := link(t, b, p2pqueue.DeviceMemory, 1024, 16)
	out := link(t, b, p2pqueue.MappedPinnedMemory, 1024, 16)
	ctx := ctxFor(t, time.Minute)
	var mu sync.Mutex
	var dead []rk.DeadLetter
	onDead := func(d rk.DeadLetter) { mu.Lock(); dead = append(dead, d); mu.Unlock() }
	k1, err := launch(t, ctx, b, rk.Spec{Stage: rk.Stage{Name: "double", Op: "scale", Params: []float32{2}}, ID: 1,
		In: []*p2pqueue.Link{in}, Out: []*p2pqueue.Link{mid}, OutLocal: []bool{true}, OnDeadLetter: onDead})
	if err != nil {
		t.Fatal(err)
	}
	k2, err := launch(t, ctx, b, rk.Spec{Stage: rk.Stage{Name: "plus1", Op: "offset", Params: []float32{1}}, ID: 2,
		In: []*p2pqueue.Link{mid}, InLocal: []bool{true}, Out: []*p2pqueue.Link{out}, OnDeadLetter: onDead})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []*rk.Kernel{k1, k2} {
		if err := k.Activate(ctx); err != nil {
			t.Fatal(err)
		}
	}
	send, _ := in.Producer()
	recv, _ := out.Consumer()
	const msgs = 20000
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 5))
	inputs := make([][]float32, msgs)
	for i := range inputs {
		inputs[i] = make([]float32, 1+rng.IntN(16))
		for j := range inputs[i] {
			inputs[i][j] = float32(rng.NormFloat64() * 1000)
		}
	}
	go func() {
		for i, v := range inputs {
			m := p2pqueue.Message{Header: p2pqueue.Header{ID: uint64(i)}, Payload: kernels.EncodeFloats(nil, v)}
			if err := send.Enqueue(ctx, &m); err != nil {
				return
			}
		}
		send.Close()
	}()
	var m p2pqueue.Message
	for i := range msgs {
		if err := recv.Dequeue(ctx, &m); err != nil {
			t.Fatalf("message %d: %v (stage 1 %+v, stage 2 %+v)", i, err, k1.Status(), k2.Status())
		}
		got, err := kernels.DecodeFloats(nil, m.Payload)
		if err != nil || m.ID != uint64(i) || len(got) != len(inputs[i]) {
			t.Fatalf("message %d: id %d, %d floats, %v", i, m.ID, len(got), err)
		}
		for j, x := range inputs[i] {
			if want := x*2 + 1; got[j] != want {
				t.Fatalf("message %d element %d: %g, want %g", i, j, got[j], want)
			}
		}
	}
	// Closing the ingress drains both kernels, and each closes its out-link.
	for _, k := range []*rk.Kernel{k1, k2} {
		if err := k.Terminate(ctx, true); err != nil {
			t.Fatal(err)
		}
	}
	if err := recv.Dequeue(ctx, &m); err == nil {
		t.Fatalf("a message after the last: %d", m.ID)
	}
	s1, s2 := k1.Status(), k2.Status()
	if s1.Processed != msgs || s2.Processed != msgs || s1.Dropped+s2.Dropped != 0 || len(dead) != 0 {
		t.Fatalf("stage 1 %+v, stage 2 %+v, %d dead letters", s1, s2, len(dead))
	}
	st := mid.Stats()
	if st.Published != msgs || st.Consumed != msgs || !st.Closed {
		t.Fatalf("device link as the host observes it: %+v", st)
	}
}

// A million 64-byte messages through one ring kernel: every one arrives
// once, in order, and the counters conserve.
func TestGPUStressMillionMessages(t *testing.T) {
	b := gpu(t)
	in := link(t, b, p2pqueue.MappedPinnedMemory, 4096, 16)
	out := link(t, b, p2pqueue.MappedPinnedMemory, 4096, 16)
	ctx := ctxFor(t, 5*time.Minute)
	k, err := launch(t, ctx, b, rk.Spec{Stage: rk.Stage{Name: "id", Op: "identity"}, In: []*p2pqueue.Link{in}, Out: []*p2pqueue.Link{out}})
	if err != nil {
		t.Fatal(err)
	}
	if err := k.Activate(ctx); err != nil {
		t.Fatal(err)
	}
	send, _ := in.Producer()
	recv, _ := out.Consumer()
	const total = 1_000_000
	payload := kernels.EncodeFloats(nil, make([]float32, 16))
	go func() {
		batch := make([]p2pqueue.Message, 64)
		for i := 0; i < total; {
			n := min(len(batch), total-i)
			for j := range n {
				batch[j] = p2pqueue.Message{Header: p2pqueue.Header{ID: uint64(i + j)}, Payload: payload}
			}
			done, err := send.EnqueueBatch(ctx, batch[:n])
			if err != nil {
				return
			}
			i += done
		}
		send.Close()
	}()
	msgs := make([]p2pqueue.Message, 64)
	next := uint64(0)
	start := time.Now()
	for next < total {
		n, err := recv.DequeueBatch(ctx, msgs)
		for _, m := range msgs[:n] {
			if m.ID != next {
				t.Fatalf("got message %d, want %d", m.ID, next)
			}
			next++
		}
		if err != nil && next < total {
			t.Fatalf("after %d messages: %v (%+v)", next, err, k.Status())
		}
	}
	t.Logf("%d messages in %v: %.2f M msg/s", total, time.Since(start), total/time.Since(start).Seconds()/1e6)
	if err := k.Terminate(ctx, true); err != nil {
		t.Fatal(err)
	}
	st := k.Status()
	if st.Processed != total || st.Dropped != 0 || st.In() != st.Processed+st.Dropped+st.Queued() {
		t.Fatalf("status %+v", st)
	}
}

// Terminate ends a busy-polling kernel well within 100 ms.
func TestGPUTerminateWithin100ms(t *testing.T) {
	b := gpu(t)
	in := link(t, b, p2pqueue.MappedPinnedMemory, 64, 16)
	k, err := launch(t, ctxFor(t, time.Minute), b, rk.Spec{Stage: rk.Stage{Name: "sink", Op: "identity"}, In: []*p2pqueue.Link{in}})
	if err != nil {
		t.Fatal(err)
	}
	if err := k.Activate(ctxFor(t, time.Minute)); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := k.Terminate(ctxFor(t, 100*time.Millisecond), false); err != nil {
		t.Fatalf("terminate within 100 ms: %v", err)
	}
	t.Logf("terminated in %v", time.Since(start))
	if st := k.Status(); st.State != rk.Terminated {
		t.Fatalf("state %s", st.State)
	}
}

// Sampled messages come back as trace records whose device times, through
// the launch-time calibration, land near the host's clock.
func TestGPUTraceTimesAreCalibrated(t *testing.T) {
	b := gpu(t)
	in := link(t, b, p2pqueue.MappedPinnedMemory, 64, 16)
	ctx := ctxFor(t, time.Minute)
	recs := make(chan rk.TraceRecord, 16)
	k, err := launch(t, ctx, b, rk.Spec{Stage: rk.Stage{Name: "sink", Op: "identity"}, In: []*p2pqueue.Link{in},
		OnTrace: func(r rk.TraceRecord) { recs <- r }})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Terminate(ctx, false)
	if err := k.Activate(ctx); err != nil {
		t.Fatal(err)
	}
	send, _ := in.Producer()
	before := time.Now()
	m := p2pqueue.Message{Header: p2pqueue.Header{ID: 9, Flags: p2pqueue.FlagSampled}, Payload: kernels.EncodeFloats(nil, []float32{1})}
	if err := send.Enqueue(ctx, &m); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-recs:
		after := time.Now()
		if r.ID != 9 || r.Dequeued.Before(before.Add(-time.Millisecond)) || r.Done.After(after.Add(time.Millisecond)) || r.Done.Before(r.Dequeued) {
			t.Fatalf("record %+v outside [%v, %v]", r, before, after)
		}
	case <-ctx.Done():
		t.Fatal("no trace record")
	}
}
