package cuda

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/ringactor/ringactor/kernels"
	"github.com/ringactor/ringactor/p2pqueue"
	rk "github.com/ringactor/ringactor/ringkernel"
)

// Spec.Variant reaches the device: the block loop takes 128 queued messages
// in one batch (one release of head), the warp loop (ra_warp.cuh) at most 32
// a step (four releases). The in-link's release counter, which the loop
// keeps (p2pqueue.Stats), tells them apart; the kernel is activated only
// once all 128 are queued, so both counts are exact.
func TestLoopVariantReachesTheDevice(t *testing.T) {
	b := gpuBackend(t, Options{})
	for _, c := range []struct {
		v        rk.LoopVariant
		releases uint64
	}{{rk.LoopClassic, 1}, {rk.LoopWarp, 4}} {
		t.Run(fmt.Sprint("variant", c.v), func(t *testing.T) {
			cfg := p2pqueue.ConfigFor(256, 16)
			n, err := cfg.RegionSize()
			if err != nil {
				t.Fatal(err)
			}
			r, err := b.Alloc(0, n, p2pqueue.MappedPinnedMemory)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { b.Free(r) })
			in, err := p2pqueue.Init(r, cfg)
			if err != nil {
				t.Fatal(err)
			}
			send, err := in.Producer()
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			k, err := rk.Launch(ctx, b, rk.Spec{Stage: rk.Stage{Name: "sink", Op: "identity"}, ID: 1, In: []*p2pqueue.Link{in}, Variant: c.v})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				if err := k.Terminate(ctx, false); err != nil {
					t.Errorf("terminate: %v", err)
				}
			})
			const msgs = 128
			for i := range msgs {
				m := p2pqueue.Message{Header: p2pqueue.Header{ID: uint64(i + 1)}, Payload: kernels.EncodeFloats(nil, []float32{float32(i)})}
				if err := send.Enqueue(ctx, &m); err != nil {
					t.Fatal(err)
				}
			}
			if err := k.Activate(ctx); err != nil {
				t.Fatal(err)
			}
			for k.Status().Processed < msgs {
				if ctx.Err() != nil {
					t.Fatalf("processed %d of %d: %v", k.Status().Processed, msgs, ctx.Err())
				}
				time.Sleep(time.Millisecond)
			}
			if got := in.Stats().Releases; got != c.releases {
				t.Fatalf("variant %d: %d releases of head for %d queued messages, want %d", c.v, got, msgs, c.releases)
			}
		})
	}
}

// An unknown variant is refused at launch, naming the fix.
func TestLoopVariantUnknownRefused(t *testing.T) {
	b := gpuBackend(t, Options{})
	cfg := p2pqueue.ConfigFor(64, 16)
	n, err := cfg.RegionSize()
	if err != nil {
		t.Fatal(err)
	}
	r, err := b.Alloc(0, n, p2pqueue.MappedPinnedMemory)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Free(r) })
	in, err := p2pqueue.Init(r, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := rk.Launch(ctx, b, rk.Spec{Stage: rk.Stage{Name: "sink", Op: "identity"}, In: []*p2pqueue.Link{in}, Variant: rk.LoopWarp + 1}); err == nil {
		t.Fatal("launched an unknown loop variant")
	} else if !errors.Is(err, rk.ErrBadStage) {
		t.Fatalf("unknown variant: %v, want ErrBadStage", err)
	}
}
