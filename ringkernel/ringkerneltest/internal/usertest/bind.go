package usertest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ringactor/ringactor/kernels"
	"github.com/ringactor/ringactor/p2pqueue"
	rk "github.com/ringactor/ringactor/ringkernel"
	"github.com/ringactor/ringactor/ringkernel/devmem"
)

var boundRuns atomic.Int64

// bufOp registers, under a fresh name (so -count=N registers anew), an op
// that reads one buffer bound to its stage and writes another, its Go side
// (GoBuf) and its CUDA side (RA_BUF_STAGE) alike: it maps each element x
// of a message to table[x] of its first buffer (float32s; an index outside
// it dead-letters the message), adds the results element by element into
// its second buffer (float32s, at least as long as the message), and
// counts the messages it took in its state. One op, so the CUDA backend
// loads one module before any kernel runs.
func bufOp(t *testing.T) string {
	name := fmt.Sprintf("test.lookup_add_%d", boundRuns.Add(1))
	op := kernels.Op{
		Name: name, Buffers: 2, StateFloats: 1,
		GoBuf: func(_, state []float32, bufs [][]byte, in, out []float32) (int, error) {
			table, err := kernels.ViewFloats(bufs[0], nil)
			if err != nil {
				return 0, err
			}
			acc, err := kernels.ViewFloats(bufs[1], nil)
			if err != nil {
				return 0, err
			}
			if len(in) > len(out) || len(in) > len(acc) {
				return 0, kernels.ErrOutputTooSmall
			}
			for _, x := range in {
				if x < 0 || int(x) >= len(table) {
					return 0, fmt.Errorf("index %g outside a table of %d", x, len(table))
				}
			}
			for i, x := range in {
				out[i] = table[int(x)]
				acc[i] += out[i]
			}
			state[0]++
			return len(in), nil
		},
		CUDA: `#include "ringactor.cuh"
RA_BUF_STAGE(` + kernels.Symbol(name) + `) {
    if (nbufs != 2) return RA_STAGE_ERR_DOMAIN;
    const float *table = (const float *)bufs[0].ptr;
    float *acc = (float *)bufs[1].ptr;
    const int len = (int)(bufs[0].size / 4);
    if (n > out_cap || (unsigned long long)n * 4 > bufs[1].size) return RA_STAGE_ERR_OUTPUT_TOO_SMALL;
    for (int i = 0; i < n; i++)
        if (in[i] < 0.0f || (int)in[i] >= len) return RA_STAGE_ERR_DOMAIN;
    for (int i = 0; i < n; i++) {
        out[i] = table[(int)in[i]];
        acc[i] += out[i];
    }
    state[0] += 1.0f;
    return n;
}
`,
	}
	if err := kernels.Register(op); err != nil {
		t.Fatal(err)
	}
	return name
}

// Buffers bound to stages: a stage reads a lookup table it binds (on a
// peer device where there is one) and adds its results into an
// accumulator it binds, which the host then reads back; Launch refuses a binding the kernel's device
// cannot address (a buffer its backend did not allocate, or one on a
// device it has no peer access to).
func BoundBuffers(t *testing.T, s Suite) {
	bb, ok := s.Backend().(devmem.Backend)
	if !ok {
		t.Fatalf("%s backend (%T) has no buffers: implement devmem.Backend, or list Buffers in Options.Lacks with the reason", s.Name(), s.Backend())
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dev := s.Device(1)
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
	op := bufOp(t)
	// The backend's devices and how they reach each other: the table
	// lives on a peer of the kernel's device where it has one (the kernel
	// reads it by peer access), the accumulator on the kernel's device.
	var devs []rk.Device
	if lister, ok := s.Backend().(rk.DeviceLister); ok {
		var err error
		if devs, err = lister.ListDevices(); err != nil {
			t.Fatal(err)
		}
	}
	topo := p2pqueue.PeerFunc(func(a, b int) bool { return a < len(devs) && b < len(devs[a].P2P) && devs[a].P2P[b] })
	tdev := dev
	for d := range devs {
		if p2pqueue.PathOf(dev, d, topo) == p2pqueue.PathPeer {
			tdev = d
			break
		}
	}

	table := make([]float32, 16)
	for i := range table {
		table[i] = float32(i*i) + 0.5
	}
	tb, acc := alloc(tdev, 4*len(table)), alloc(dev, 4*4)
	if err := bb.Write(ctx, tb, 0, kernels.EncodeFloats(nil, table)); err != nil {
		t.Fatal(err)
	}
	r := s.Launch(t, rk.Stage{Name: "lookup", Op: op, Stateful: true, Buffers: []rk.Binding{{Buf: tb}, {Buf: acc, Write: true}}}, 16, 8, true)
	// The launch built the user op: over the emulated driver that is a
	// host compile, a minute and more on a loaded machine, so what follows
	// gets a minute of its own.
	ctx, cancel = context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	msgs := [][]float32{{3, 0, 15}, {16}, {7}, {1, 2, 3, 4}}
	sums := make([]float32, 4)
	for i, m := range msgs {
		r.SendFloats(uint64(i+1), m, 0)
		if i == 1 {
			continue // outside the table: dead-lettered
		}
		want := make([]float32, len(m))
		for j, x := range m {
			want[j] = table[int(x)]
			sums[j] += want[j]
		}
		if _, v := r.RecvFloats(); fmt.Sprint(v) != fmt.Sprint(want) {
			t.Fatalf("message %d: gave %v, want %v", i+1, v, want)
		}
	}
	s.Eventually(t, "the out-of-table message's dead letter", func() bool { return len(r.DeadLetters()) == 1 })
	if d := r.DeadLetters()[0]; d.ID != 2 {
		t.Errorf("dead letter %+v, want message 2", d)
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
		_, err := s.LaunchSpec(t, ctx, rk.Spec{Stage: rk.Stage{Name: "bad", Op: op, Stateful: true, Buffers: []rk.Binding{{Buf: b}, {Buf: acc}}},
			Device: on, In: []*p2pqueue.Link{s.NewLink(t, 8, 4)}})
		return err
	}
	foreign := devmem.Buffer{Device: dev, Size: 64, Addr: acc.Addr + 1<<40}
	if err := launch(dev, foreign); !errors.Is(err, rk.ErrBadStage) || !strings.Contains(err.Error(), "bound buffer 0") {
		t.Errorf("a buffer this backend did not allocate: %v; want ErrBadStage naming bound buffer 0", err)
	}
	for on := range devs {
		for at := range devs {
			if p := p2pqueue.PathOf(on, at, topo); p != p2pqueue.PathStaged {
				continue
			}
			far := alloc(at, 64)
			if err := launch(on, far); !errors.Is(err, rk.ErrBadStage) || !strings.Contains(err.Error(), "peer") {
				t.Errorf("a kernel on device %d bound a buffer on device %d, which it has no peer access to: %v; want ErrBadStage saying so", on, at, err)
			}
			return // one such pair is enough
		}
	}
}
