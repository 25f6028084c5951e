package ringkerneltest

import (
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/ringactor/ringactor/kernels"
	"github.com/ringactor/ringactor/p2pqueue"
	rk "github.com/ringactor/ringactor/ringkernel"
)

// Two ring kernels on one GPU joined by a link in device memory: x*2, then
// +1, checked message by message against Go; nothing lost, in order.
func (s *suite) testGPUTwoStagesOverADeviceMemoryLink(t *testing.T) {
	in := s.allocLink(t, p2pqueue.MappedPinnedMemory, s.device(0), 1024, 16)
	mid := s.allocLink(t, p2pqueue.DeviceMemory, s.device(0), 1024, 16)
	out := s.allocLink(t, p2pqueue.MappedPinnedMemory, s.device(0), 1024, 16)
	ctx := ctxFor(t, time.Minute)
	var mu sync.Mutex
	var dead []rk.DeadLetter
	onDead := func(d rk.DeadLetter) { mu.Lock(); dead = append(dead, d); mu.Unlock() }
	k1, err := s.launchSpec(t, ctx, rk.Spec{Stage: rk.Stage{Name: "double", Op: "scale", Params: []float32{2}}, ID: 1,
		In: []*p2pqueue.Link{in}, Out: []*p2pqueue.Link{mid}, OutLocal: []bool{true}, OnDeadLetter: onDead})
	if err != nil {
		t.Fatal(err)
	}
	k2, err := s.launchSpec(t, ctx, rk.Spec{Stage: rk.Stage{Name: "plus1", Op: "offset", Params: []float32{1}}, ID: 2,
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

// Options.StressMessages 64-byte messages through one ring kernel (a
// million on the CUDA backend): every one arrives
// once, in order, and the counters conserve.
func (s *suite) testGPUStressMillionMessages(t *testing.T) {
	in := s.allocLink(t, p2pqueue.MappedPinnedMemory, s.device(0), 4096, 16)
	out := s.allocLink(t, p2pqueue.MappedPinnedMemory, s.device(0), 4096, 16)
	ctx := ctxFor(t, 5*time.Minute)
	k, err := s.launchSpec(t, ctx, rk.Spec{Stage: rk.Stage{Name: "id", Op: "identity"}, In: []*p2pqueue.Link{in}, Out: []*p2pqueue.Link{out}})
	if err != nil {
		t.Fatal(err)
	}
	if err := k.Activate(ctx); err != nil {
		t.Fatal(err)
	}
	send, _ := in.Producer()
	recv, _ := out.Consumer()
	total := uint64(s.stressMessages())
	payload := kernels.EncodeFloats(nil, make([]float32, 16))
	go func() {
		batch := make([]p2pqueue.Message, 64)
		for i := uint64(0); i < total; {
			n := min(uint64(len(batch)), total-i)
			for j := range n {
				batch[j] = p2pqueue.Message{Header: p2pqueue.Header{ID: i + j}, Payload: payload}
			}
			done, err := send.EnqueueBatch(ctx, batch[:n])
			if err != nil {
				return
			}
			i += uint64(done)
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
	t.Logf("%d messages in %v: %.2f M msg/s", total, time.Since(start), float64(total)/time.Since(start).Seconds()/1e6)
	if err := k.Terminate(ctx, true); err != nil {
		t.Fatal(err)
	}
	st := k.Status()
	if st.Processed != total || st.Dropped != 0 || st.In() != st.Processed+st.Dropped+st.Queued() {
		t.Fatalf("status %+v", st)
	}
}

// Terminate ends a busy-polling kernel well within 100 ms.
func (s *suite) testGPUTerminateWithin100ms(t *testing.T) {
	in := s.allocLink(t, p2pqueue.MappedPinnedMemory, s.device(0), 64, 16)
	k, err := s.launchSpec(t, ctxFor(t, time.Minute), rk.Spec{Stage: rk.Stage{Name: "sink", Op: "identity"}, In: []*p2pqueue.Link{in}})
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
func (s *suite) testGPUTraceTimesAreCalibrated(t *testing.T) {
	in := s.allocLink(t, p2pqueue.MappedPinnedMemory, s.device(0), 64, 16)
	ctx := ctxFor(t, time.Minute)
	recs := make(chan rk.TraceRecord, 16)
	k, err := s.launchSpec(t, ctx, rk.Spec{Stage: rk.Stage{Name: "sink", Op: "identity"}, In: []*p2pqueue.Link{in},
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
