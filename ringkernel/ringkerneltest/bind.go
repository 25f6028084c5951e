package ringkerneltest

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ringactor/ringactor/kernels"
	"github.com/ringactor/ringactor/p2pqueue"
	rk "github.com/ringactor/ringactor/ringkernel"
	"github.com/ringactor/ringactor/ringkernel/devmem"
)

var boundRuns atomic.Int64

// bufOps registers, under fresh names (so -count=N registers anew), two
// ops that read or write the buffers bound to their stage, each a Go side
// (GoBuf) and a CUDA side (RA_BUF_STAGE) that agree: lookup maps each
// element to table[element] of its one buffer (a float32 table; an index
// outside it is an error), accumulate adds each message into its one
// buffer (float32s) element by element and gives the sums so far.
func bufOps(t *testing.T) (lookup, accumulate string) {
	n := boundRuns.Add(1)
	lookup, accumulate = fmt.Sprintf("test.lookup_%d", n), fmt.Sprintf("test.accumulate_%d", n)
	ops := []kernels.Op{{
		Name: lookup, Buffers: 1,
		GoBuf: func(_, _ []float32, bufs [][]byte, in, out []float32) (int, error) {
			table, err := kernels.ViewFloats(bufs[0], nil)
			if err != nil {
				return 0, err
			}
			if len(in) > len(out) {
				return 0, kernels.ErrOutputTooSmall
			}
			for i, x := range in {
				j := int(x)
				if x < 0 || j >= len(table) {
					return 0, fmt.Errorf("index %g outside a table of %d", x, len(table))
				}
				out[i] = table[j]
			}
			return len(in), nil
		},
		CUDA: `#include "ringactor.cuh"
RA_BUF_STAGE(` + kernels.Symbol(lookup) + `) {
    if (nbufs != 1) return RA_STAGE_ERR_DOMAIN;
    if (n > out_cap) return RA_STAGE_ERR_OUTPUT_TOO_SMALL;
    const float *table = (const float *)bufs[0].ptr;
    int len = (int)(bufs[0].size / 4);
    for (int i = 0; i < n; i++) {
        int j = (int)in[i];
        if (in[i] < 0.0f || j >= len) return RA_STAGE_ERR_DOMAIN;
        out[i] = table[j];
    }
    return n;
}
`,
	}, {
		Name: accumulate, Buffers: 1,
		GoBuf: func(_, _ []float32, bufs [][]byte, in, out []float32) (int, error) {
			acc, err := kernels.ViewFloats(bufs[0], nil)
			if err != nil {
				return 0, err
			}
			if len(in) > len(out) || len(in) > len(acc) {
				return 0, kernels.ErrOutputTooSmall
			}
			for i, x := range in {
				acc[i] += x
				out[i] = acc[i]
			}
			return len(in), nil
		},
		CUDA: `#include "ringactor.cuh"
RA_BUF_STAGE(` + kernels.Symbol(accumulate) + `) {
    if (nbufs != 1) return RA_STAGE_ERR_DOMAIN;
    float *acc = (float *)bufs[0].ptr;
    if (n > out_cap || (unsigned long long)n * 4 > bufs[0].size) return RA_STAGE_ERR_OUTPUT_TOO_SMALL;
    for (int i = 0; i < n; i++) {
        acc[i] += in[i];
        out[i] = acc[i];
    }
    return n;
}
`,
	}}
	for _, op := range ops {
		if err := kernels.Register(op); err != nil {
			t.Fatal(err)
		}
	}
	return lookup, accumulate
}

// Buffers bound to stages: a stage reads a lookup table it binds, a
// stateful one adds every message into an accumulator it binds, which the
// host then reads back; Launch refuses a binding the kernel's device
// cannot address (a buffer its backend did not allocate, or one on a
// device it has no peer access to).
func (s *suite) testBoundBuffers(t *testing.T) {
	bb, ok := s.b.(devmem.Backend)
	if !ok {
		t.Fatalf("%s backend (%T) has no buffers: implement devmem.Backend, or list Buffers in Options.Lacks with the reason", s.opts.Name, s.b)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dev := s.device(1)
	alloc := func(d, size int) devmem.Buffer {
		t.Helper()
		b, err := bb.AllocBuffer(ctx, d, size, devmem.DeviceMemory)
		if err != nil {
			t.Fatalf("device %d: %v", d, err)
		}
		// Freed after the kernels binding it have ended (cleanups run last
		// registered first, and the kernels are launched after this).
		t.Cleanup(func() {
			if err := bb.FreeBuffer(b); err != nil {
				t.Errorf("free: %v", err)
			}
		})
		return b
	}
	lookup, accumulate := bufOps(t)

	table := make([]float32, 16)
	for i := range table {
		table[i] = float32(i*i) + 0.5
	}
	tb := alloc(dev, 4*len(table))
	if err := bb.Write(ctx, tb, 0, kernels.EncodeFloats(nil, table)); err != nil {
		t.Fatal(err)
	}
	r := s.launch(t, rk.Stage{Name: "lookup", Op: lookup, Buffers: []rk.Binding{{Buf: tb}}}, 16, 8, true)
	r.sendFloats(1, []float32{3, 0, 15}, 0)
	r.sendFloats(2, []float32{16}, 0) // outside the table: dead-lettered
	r.sendFloats(3, []float32{7}, 0)
	for _, want := range [][]float32{{9.5, 0.5, 225.5}, {49.5}} {
		if _, v := r.recvFloats(); fmt.Sprint(v) != fmt.Sprint(want) {
			t.Fatalf("lookup gave %v, want %v", v, want)
		}
	}
	eventually(t, "the out-of-table message's dead letter", func() bool { return len(r.deadLetters()) == 1 })
	if d := r.deadLetters()[0]; d.ID != 2 {
		t.Errorf("dead letter %+v, want message 2", d)
	}

	acc := alloc(dev, 4*4)
	a := s.launch(t, rk.Stage{Name: "accumulate", Op: accumulate, Stateful: true, Buffers: []rk.Binding{{Buf: acc, Write: true}}}, 16, 8, true)
	msgs := [][]float32{{1, 2, 3, 4}, {10, 20, 30, 40}, {0.5}, {0, 0, 0, 100}}
	sums := make([]float32, 4)
	for i, m := range msgs {
		a.sendFloats(uint64(i+1), m, 0)
		for j, x := range m {
			sums[j] += x
		}
		if _, v := a.recvFloats(); fmt.Sprint(v) != fmt.Sprint(sums[:len(m)]) {
			t.Fatalf("accumulate, message %d: gave %v, want %v", i+1, v, sums[:len(m)])
		}
	}
	got := make([]byte, acc.Size)
	if err := bb.Read(ctx, acc, 0, got); err != nil {
		t.Fatal(err)
	}
	if v, _ := kernels.DecodeFloats(nil, got); fmt.Sprint(v) != fmt.Sprint(sums) {
		t.Errorf("accumulator reads back %v, want %v", v, sums)
	}

	// Bindings the kernel's device cannot address are refused at Launch.
	launch := func(on int, b devmem.Buffer) error {
		_, err := s.launchSpec(t, ctx, rk.Spec{Stage: rk.Stage{Name: "bad", Op: lookup, Buffers: []rk.Binding{{Buf: b}}},
			Device: on, In: []*p2pqueue.Link{s.newLink(t, 8, 4)}})
		return err
	}
	foreign := devmem.Buffer{Device: dev, Size: 64, Addr: tb.Addr + 1<<40}
	if err := launch(dev, foreign); !errors.Is(err, rk.ErrBadStage) || !contains(err.Error(), "bound buffer 0") {
		t.Errorf("a buffer this backend did not allocate: %v; want ErrBadStage naming bound buffer 0", err)
	}
	lister, ok := s.b.(rk.DeviceLister)
	if !ok {
		return
	}
	devs, err := lister.ListDevices()
	if err != nil {
		t.Fatal(err)
	}
	topo := p2pqueue.PeerFunc(func(a, b int) bool { return b < len(devs[a].P2P) && devs[a].P2P[b] })
	for on := range min(len(devs), s.opts.Devices) {
		for at := range min(len(devs), s.opts.Devices) {
			if p := p2pqueue.PathOf(on, at, topo); p != p2pqueue.PathStaged {
				continue
			}
			far := alloc(at, 64)
			if err := launch(on, far); !errors.Is(err, rk.ErrBadStage) || !contains(err.Error(), "peer") {
				t.Errorf("a kernel on device %d bound a buffer on device %d, which it has no peer access to: %v; want ErrBadStage saying so", on, at, err)
			}
			return // one such pair is enough
		}
	}
}
