package cuda_test

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/ringactor/ringactor/cuda/cudatest"
	"github.com/ringactor/ringactor/internal/testhook"
	"github.com/ringactor/ringactor/kernels"
	"github.com/ringactor/ringactor/p2pqueue"
	rk "github.com/ringactor/ringactor/ringkernel"
	rkcuda "github.com/ringactor/ringactor/ringkernel/cuda"
)

// peerFenceLagUS is the copy lag the emulated run uses: long enough that a
// kernel launched without waiting for the other device's setup copies
// attaches its link before they land.
const peerFenceLagUS = "3000"

// A stage on device 0 whose out-link lives in device 1's memory (a peer
// link) starts only after that link's formatting has landed, by the
// backend's own fence of device 1 (GPU-REVIEW D2), not by the incidental
// DtoH of the producer claim's shadow refresh, which the test hook skips.
// The stage is identity, which has no params: no copy to device 0 of its
// own is queued after the link's, so device 0's fence orders nothing.
// Over the emulated driver it runs in a child process whose copy engine
// lags 3 ms (RINGACTOR_EMU_COPY_LAG_US): without the fence, the stage on
// device 0 faults at attach.
func TestGPUPeerLinkSetupIsFenced(t *testing.T) {
	cudatest.Device(t, 1)
	if cudatest.Emulated() && os.Getenv("RINGACTOR_EMU_COPY_LAG_US") == "" {
		cmd := exec.Command(os.Args[0], "-test.run", "^TestGPUPeerLinkSetupIsFenced$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), "RINGACTOR_EMU_COPY_LAG_US="+peerFenceLagUS)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("with the emulated copy engine %s us late: %v\n%s", peerFenceLagUS, err, out)
		}
		return
	}
	testhook.SkipClaimRefresh.Store(true)
	defer testhook.SkipClaimRefresh.Store(false)
	b, err := rkcuda.New(rkcuda.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := b.Shutdown(ctx); err != nil {
			t.Errorf("close: %v", err)
		}
	}()
	alloc := func(dev int, kind p2pqueue.MemoryKind) *p2pqueue.Link {
		cfg := p2pqueue.ConfigFor(64, 4*8)
		n, err := cfg.RegionSize()
		if err != nil {
			t.Fatal(err)
		}
		r, err := b.Alloc(dev, n, kind)
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
	ctx := ctxFor(t, time.Minute)
	for round := range 5 { // fresh links each round, so each launch meets copies still in flight
		in := alloc(0, p2pqueue.MappedPinnedMemory)
		mid := alloc(1, p2pqueue.DeviceMemory) // written by device 0 through the peer mapping
		out := alloc(1, p2pqueue.MappedPinnedMemory)
		k1, err := rk.Launch(ctx, b, rk.Spec{Stage: rk.Stage{Name: "pass", Op: "identity"}, ID: uint32(10 + 2*round),
			Device: 0, In: []*p2pqueue.Link{in}, Out: []*p2pqueue.Link{mid}})
		if err != nil {
			t.Fatal(err)
		}
		k2, err := rk.Launch(ctx, b, rk.Spec{Stage: rk.Stage{Name: "plus1", Op: "offset", Params: []float32{1}}, ID: uint32(11 + 2*round),
			Device: 1, In: []*p2pqueue.Link{mid}, Out: []*p2pqueue.Link{out}})
		if err != nil {
			k1.Terminate(ctx, false)
			t.Fatal(err)
		}
		defer func() { // before Close, on failure too
			for _, k := range []*rk.Kernel{k1, k2} {
				k.Terminate(ctx, false)
			}
		}()
		for _, k := range []*rk.Kernel{k1, k2} {
			if err := k.Activate(ctx); err != nil {
				t.Fatalf("round %d: %v (stage 1 %+v, stage 2 %+v)", round, err, k1.Status(), k2.Status())
			}
		}
		send, _ := in.Producer()
		recv, _ := out.Consumer()
		const msgs = 200
		go func() {
			for i := range msgs {
				m := p2pqueue.Message{Header: p2pqueue.Header{ID: uint64(i)}, Payload: kernels.EncodeFloats(nil, []float32{float32(i)})}
				if send.Enqueue(ctx, &m) != nil {
					return
				}
			}
			send.Close()
		}()
		var m p2pqueue.Message
		for i := range msgs {
			if err := recv.Dequeue(ctx, &m); err != nil {
				t.Fatalf("round %d, message %d: %v (stage 1 %+v, stage 2 %+v)", round, i, err, k1.Status(), k2.Status())
			}
			got, err := kernels.DecodeFloats(nil, m.Payload)
			if err != nil || m.ID != uint64(i) || len(got) != 1 || got[0] != float32(i+1) {
				t.Fatalf("round %d, message %d: id %d, %v, %v", round, i, m.ID, got, err)
			}
		}
		for _, k := range []*rk.Kernel{k1, k2} {
			if err := k.Terminate(ctx, true); err != nil {
				t.Fatal(err)
			}
		}
	}
}
