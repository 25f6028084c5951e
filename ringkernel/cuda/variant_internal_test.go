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
// a step (four releases). The pipelined ingress (LoopWarpPrefetch) takes its
// first batch as the warp loop does, then each next one from its look-ahead,
// which holds RA_PF_WORDS (16) 8-byte words a lane: 16 of 256-byte slots
// (32 + 6x16: seven releases), 12 of a flagged link's 320-byte ones (32 +
// 8x12: nine), where the warp loop takes 32 a step. The in-link's release
// counter, which the loop keeps (p2pqueue.Stats), tells them apart; the
// kernel is activated only once all 128 are queued, so the counts are exact.
func TestLoopVariantReachesTheDevice(t *testing.T) {
	b := gpuBackend(t, Options{})
	for _, c := range []struct {
		v        rk.LoopVariant
		payload  int
		format   p2pqueue.Format
		releases uint64
	}{
		{rk.LoopClassic, 16, p2pqueue.FormatIndexed, 1}, {rk.LoopWarp, 16, p2pqueue.FormatIndexed, 4},
		{rk.LoopWarp, 200, p2pqueue.FormatIndexed, 4}, {rk.LoopWarpPrefetch, 16, p2pqueue.FormatIndexed, 4},
		{rk.LoopWarpPrefetch, 200, p2pqueue.FormatIndexed, 7},
		{rk.LoopWarp, 100, p2pqueue.FormatFlagged, 4}, {rk.LoopWarpPrefetch, 100, p2pqueue.FormatFlagged, 9},
	} {
		t.Run(fmt.Sprint("variant", c.v, "/payload", c.payload, "/", c.format), func(t *testing.T) {
			in := pinnedLinkOf(t, b, p2pqueue.ConfigForFormat(256, c.payload, c.format))
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
			// Every message counted and, after its count (ARCHITECTURE
			// §4.1), its head released: only then are the releases all in.
			for k.Status().Processed < msgs || in.Stats().Consumed < msgs {
				if ctx.Err() != nil {
					t.Fatalf("processed %d of %d, head %d: %v", k.Status().Processed, msgs, in.Stats().Consumed, ctx.Err())
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
	in := pinnedLinkOf(t, b, p2pqueue.ConfigFor(64, 16))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := rk.Launch(ctx, b, rk.Spec{Stage: rk.Stage{Name: "sink", Op: "identity"}, In: []*p2pqueue.Link{in}, Variant: rk.LoopWarpPrefetch + 1}); err == nil {
		t.Fatal("launched an unknown loop variant")
	} else if !errors.Is(err, rk.ErrBadStage) {
		t.Fatalf("unknown variant: %v, want ErrBadStage", err)
	}
}
