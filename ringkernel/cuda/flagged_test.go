package cuda_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ringactor/ringactor/cuda/cudatest"
	"github.com/ringactor/ringactor/p2pqueue"
	rk "github.com/ringactor/ringactor/ringkernel"
	rkcuda "github.com/ringactor/ringactor/ringkernel/cuda"
)

// The device loop reads and writes indexed links only (its attach does not
// read the layout version): Start refuses a flagged in- or out-link with
// ErrUnsupported, naming the format, and the link's claims are given back.
func TestFlaggedLinksRefused(t *testing.T) {
	cudatest.Driver(t)
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
	alloc := func(f p2pqueue.Format) *p2pqueue.Link {
		cfg := p2pqueue.ConfigForFormat(16, 4*8, f)
		n, err := cfg.RegionSize()
		if err != nil {
			t.Fatal(err)
		}
		r, err := b.Alloc(0, n, p2pqueue.MappedPinnedMemory)
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
	for _, flaggedIn := range []bool{true, false} {
		in, out := alloc(p2pqueue.FormatIndexed), alloc(p2pqueue.FormatFlagged)
		if flaggedIn {
			in, out = out, in
		}
		k, err := rk.Launch(ctx, b, rk.Spec{Stage: rk.Stage{Name: "pass", Op: "identity"}, In: []*p2pqueue.Link{in}, Out: []*p2pqueue.Link{out}})
		if err == nil {
			k.Terminate(ctx, false)
			t.Fatalf("flagged in-link %v: launched", flaggedIn)
		}
		if !errors.Is(err, rk.ErrUnsupported) || !strings.Contains(err.Error(), "flagged") {
			t.Fatalf("flagged in-link %v: %v, want ErrUnsupported naming the format", flaggedIn, err)
		}
		if _, err := in.Consumer(); err != nil {
			t.Fatalf("in-link's consumer claim after the refusal: %v", err)
		}
		if _, err := out.Producer(); err != nil {
			t.Fatalf("out-link's producer claim after the refusal: %v", err)
		}
	}
}
