package runtime_test

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ringactor/ringactor/internal/rttest"
	"github.com/ringactor/ringactor/kernels"
	ra "github.com/ringactor/ringactor/runtime"
)

var bindRuns atomic.Int64

// tableOp registers (under a fresh name, for -count=N) an op whose stage
// binds two buffers: it reads a float32 table from the first and gives
// table[x] for each element x, and counts the elements it saw in the
// second's float 0.
func tableOp(t *testing.T) string {
	name := fmt.Sprintf("test.table_%d", bindRuns.Add(1))
	err := kernels.Register(kernels.Op{Name: name, Buffers: 2,
		GoBuf: func(_, _ []float32, bufs [][]byte, in, out []float32) (int, error) {
			table, err := kernels.ViewFloats(bufs[0], nil)
			if err != nil {
				return 0, err
			}
			count, err := kernels.ViewFloats(bufs[1], nil)
			if err != nil {
				return 0, err
			}
			for i, x := range in {
				if int(x) < 0 || int(x) >= len(table) {
					return 0, fmt.Errorf("index %g outside a table of %d", x, len(table))
				}
				out[i] = table[int(x)]
			}
			count[0] += float32(len(in))
			return len(in), nil
		},
		CUDA: `#include "ringactor.cuh"
RA_BUF_STAGE(` + kernels.Symbol(name) + `) {
    if (nbufs != 2 || n > out_cap) return RA_STAGE_ERR_DOMAIN;
    const float *table = (const float *)bufs[0].ptr;
    for (int i = 0; i < n; i++) {
        int j = (int)in[i];
        if (in[i] < 0.0f || j >= (int)(bufs[0].size / 4)) return RA_STAGE_ERR_DOMAIN;
        out[i] = table[j];
    }
    ((float *)bufs[1].ptr)[0] += (float)n;
    return n;
}
`})
	if err != nil {
		t.Fatal(err)
	}
	return name
}

// A stage reads a buffer bound to it and writes another; Build refuses a
// buffer freed, of another runtime, or on a device the stage's cannot
// reach; Free refuses a bound buffer until its pipeline closes.
func TestStageReadsBoundBuffers(t *testing.T) {
	e := rttest.Devices(t, ra.DeviceOptions{SimDevices: 4, SimP2P: bufferTopology})
	ctx, rt := rttest.Ctx(t), e.RT
	op := tableOp(t)
	// The stage runs on GPU 0 and reads a table on its peer, GPU 1 (on
	// CUDA: where 0-1 peer, else on 0 itself); a buffer on a GPU without
	// peer access (on CUDA: where there is one, else the CPU) is refused.
	// On the CPU device everything is the CPU's, and GPU 0 is out of reach.
	reg := rt.Registry()
	dev, near, far := 0, 1, 2
	switch rttest.Backend() {
	case rttest.CPU:
		cpu := reg.CPUDevice().ID
		dev, near, far = cpu, cpu, 0
	case rttest.CUDA:
		near, far = 0, reg.CPUDevice().ID
		for _, g := range reg.GPUs() {
			if g.ID != 0 && reg.Peer(0, g.ID) && near == 0 {
				near = g.ID
			}
			if g.ID != 0 && !reg.Peer(0, g.ID) && reg.CPU(far) {
				far = g.ID
			}
		}
	}
	t.Logf("stage on device %d, table on %d, out of reach: %d", dev, near, far)
	table, err := rt.AllocBuffer(ctx, near, 4*16)
	if err != nil {
		t.Fatal(err)
	}
	vals := make([]float32, 16)
	for i := range vals {
		vals[i] = float32(i*i) + 0.5
	}
	if err := table.WriteFloat32s(ctx, 0, vals); err != nil {
		t.Fatal(err)
	}
	count, err := rt.AllocBuffer(ctx, dev, 4)
	if err != nil {
		t.Fatal(err)
	}
	results := make(chan ra.Result, 16)
	spec := ra.PipelineSpec{Name: "bound", Deliver: ra.Sink{Chan: results}, Stages: []ra.StageSpec{{Name: "lookup", Op: op, Device: dev,
		Buffers: []ra.BufferUse{{Buffer: table}, {Buffer: count, Write: true}}}}}
	p, err := rt.Build(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := table.Free(); !errors.Is(err, ra.ErrBufferInUse) {
		t.Fatalf("Free of a buffer bound to an open pipeline: %v, want ErrBufferInUse", err)
	}
	if _, err := rt.Build(ctx, spec); err == nil {
		t.Fatal("a second pipeline under the same name was built")
	}
	for _, x := range []float32{3, 7, 15} {
		r, err := p.Request(ctx, ra.Data{Floats: []float32{x, 1}})
		if err != nil {
			t.Fatal(err)
		}
		if want := []float32{vals[int(x)], vals[1]}; fmt.Sprint(r.Floats) != fmt.Sprint(want) {
			t.Fatalf("lookup of %v: %v, want %v from the bound table", x, r.Floats, want)
		}
	}
	if err := p.Close(ctx, true); err != nil {
		t.Fatal(err)
	}
	got := make([]float32, 1)
	if err := count.ReadFloat32s(ctx, 0, got); err != nil || got[0] != 6 {
		t.Fatalf("the stage counted %v elements in the buffer it writes (%v), want 6", got, err)
	}

	// Refused at Build: a buffer the stage's device cannot reach, one of
	// another runtime, a freed one. Nothing stays bound after a refusal.
	farBuf, err := rt.AllocBuffer(ctx, far, 4)
	if err != nil {
		t.Fatal(err)
	}
	other, err := rttest.Devices(t, ra.DeviceOptions{SimDevices: 4}).RT.AllocBuffer(ctx, ra.CPU, 4)
	if err != nil {
		t.Fatal(err)
	}
	freed, err := rt.AllocBuffer(ctx, dev, 4)
	if err != nil {
		t.Fatal(err)
	}
	if err := freed.Free(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		what string
		buf  *ra.Buffer
		want error
		says string
	}{
		{"unreachable", farBuf, ra.ErrBadPipeline, fmt.Sprintf("allocate it on device %d, or copy it there", dev)},
		{"another runtime's", other, ra.ErrBadPipeline, "another runtime"},
		{"freed", freed, ra.ErrBufferFreed, "freed"},
	} {
		s := spec
		s.Name = "refused"
		s.Stages = []ra.StageSpec{spec.Stages[0]}
		s.Stages[0].Buffers = []ra.BufferUse{{Buffer: c.buf}, {Buffer: count, Write: true}}
		_, err := rt.Build(ctx, s)
		if !errors.Is(err, c.want) || !errors.Is(err, ra.ErrBadPipeline) || !strings.Contains(err.Error(), c.says) {
			t.Fatalf("a %s buffer: %v, want %v saying %q", c.what, err, c.want, c.says)
		}
	}
	for _, b := range []*ra.Buffer{table, count, farBuf, other} {
		if err := b.Free(); err != nil {
			t.Fatalf("Free once no pipeline is open: %v", err)
		}
	}
	if n := ra.LiveBuffers(rt); n != 0 {
		t.Fatalf("%d buffers live", n)
	}
}
