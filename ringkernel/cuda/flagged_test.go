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

// The device loop reads and writes flagged links, but Start refuses, with
// ErrUnsupported naming why, a flagged in-link whose slot its staging area
// cannot hold, an in-slot and a flagged out-link's result that do not fit
// it together, and a flagged steal link (a steal copies slots as bytes);
// the links' claims are given back.
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
	alloc := func(f p2pqueue.Format, floats int) *p2pqueue.Link {
		cfg := p2pqueue.ConfigForFormat(16, 4*floats, f)
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
	for _, c := range []struct {
		name         string
		in, out, stl *p2pqueue.Link
		want         string
	}{
		{"flagged in-link too big to stage", alloc(p2pqueue.FormatFlagged, 4096), alloc(p2pqueue.FormatIndexed, 8), nil, "stages a flagged slot whole"},
		{"in-slot and flagged result too big", alloc(p2pqueue.FormatIndexed, 4096), alloc(p2pqueue.FormatFlagged, 4096), nil, "do not fit"},
		{"flagged steal link", alloc(p2pqueue.FormatIndexed, 8), alloc(p2pqueue.FormatIndexed, 8), alloc(p2pqueue.FormatFlagged, 8), "steal link"},
	} {
		spec := rk.Spec{Stage: rk.Stage{Name: "pass", Op: "identity"}, In: []*p2pqueue.Link{c.in}, Out: []*p2pqueue.Link{c.out}}
		if c.stl != nil {
			spec.StealTo = []*p2pqueue.Link{c.stl}
		}
		k, err := rk.Launch(ctx, b, spec)
		if err == nil {
			k.Terminate(ctx, false)
			t.Fatalf("%s: launched", c.name)
		}
		if !errors.Is(err, rk.ErrUnsupported) || !strings.Contains(err.Error(), c.want) {
			t.Fatalf("%s: %v, want ErrUnsupported saying %q", c.name, err, c.want)
		}
		if _, err := c.in.Consumer(); err != nil {
			t.Fatalf("%s: in-link's consumer claim after the refusal: %v", c.name, err)
		}
		if _, err := c.out.Producer(); err != nil {
			t.Fatalf("%s: out-link's producer claim after the refusal: %v", c.name, err)
		}
	}
}
