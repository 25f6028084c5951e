// Command vectoradd is the tutorial's exercise 1 on every device: c = a +
// b for n floats, the vectors in device buffers. Each device holds its
// part of a, b and c (Runtime.AllocBuffer), written from the host; one
// stage per device runs the user op vadd, which binds the device's three
// buffers (StageSpec.Buffers) and adds the chunk a message names
// (offset, count) into c; the host reads each device's c back and checks
// every element against Go's a[i] + b[i]. Two partitions (-partition,
// default both):
//
//   - block: one contiguous range per device, sent as one message;
//   - cyclic: chunks of -chunk elements dealt round-robin (chunk k to
//     device k mod d), one message each.
//
// It prints each device's share of the elements and the time it took,
// and "0 mismatches".
//
//	go run ./examples/vectoradd                  # sim, or the GPUs when CUDA runs them
//	go run ./examples/vectoradd -backend cuda    # the GPUs
//	make emu && RINGACTOR_LIBCUDA=$PWD/.emu/libcudaemu.so RINGACTOR_EMU_DEVICES=4 \
//	    go run ./examples/vectoradd -backend cuda  # the emulated driver, no GPU
//	go run ./examples/vectoradd -n 4000000 -partition cyclic -chunk 65536
//
// vadd's Go side (kernels.Op.GoBuf) runs on sim; its CUDA side (a
// RA_BUF_STAGE function, opSource) on a GPU and over the emulated driver,
// which compiles it for the CPU.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/ringactor/ringactor/kernels"
	ra "github.com/ringactor/ringactor/runtime"
)

type options struct {
	backend   string // auto, sim or cuda
	n         int    // elements
	devices   int    // devices to use (0: every GPU)
	partition string // block, cyclic or both
	chunk     int    // cyclic: elements a chunk
	seed      uint64
}

func main() {
	var o options
	flag.StringVar(&o.backend, "backend", "auto", "auto, sim or cuda (auto: the GPUs when the CUDA backend runs them, else simulated devices)")
	flag.IntVar(&o.n, "n", 1<<20, "elements of a, b and c")
	flag.IntVar(&o.devices, "devices", 0, "devices to spread the vectors over (0: every GPU)")
	flag.StringVar(&o.partition, "partition", "both", "block (one range a device), cyclic (chunks round-robin) or both")
	flag.IntVar(&o.chunk, "chunk", 16384, "cyclic: elements a chunk")
	flag.Uint64Var(&o.seed, "seed", 1, "seed of a and b")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if _, err := run(ctx, o, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "vectoradd:", err)
		os.Exit(1)
	}
}

// opName is the user op: its message is a chunk (offset, count) of the
// device's buffers a, b, c; it writes c = a + b there and answers the
// chunk.
const opName = "vadd"

// opSource is vadd's CUDA side: one thread adds a chunk.
var opSource = `#include "ringactor.cuh"
RA_BUF_STAGE(` + kernels.Symbol(opName) + `) {
    if (nbufs != 3 || n != 2 || out_cap < 2) return RA_STAGE_ERR_DOMAIN;
    long long off = (long long)in[0], cnt = (long long)in[1];
    if (in[0] < 0.0f || in[1] < 0.0f || (unsigned long long)(off + cnt) * 4 > bufs[2].size ||
        bufs[0].size != bufs[2].size || bufs[1].size != bufs[2].size)
        return RA_STAGE_ERR_DOMAIN;
    const float *a = (const float *)bufs[0].ptr, *b = (const float *)bufs[1].ptr;
    float *c = (float *)bufs[2].ptr;
    for (long long i = off; i < off + cnt; i++) c[i] = a[i] + b[i];
    out[0] = in[0];
    out[1] = in[1];
    return 2;
}
`

// vadd is vadd's Go side.
func vadd(_, _ []float32, bufs [][]byte, in, out []float32) (int, error) {
	if len(in) != 2 || len(out) < 2 {
		return 0, fmt.Errorf("vadd: a message is (offset, count), got %d floats", len(in))
	}
	var v [3][]float32
	for i := range v {
		var err error
		if v[i], err = kernels.ViewFloats(bufs[i], nil); err != nil {
			return 0, err
		}
	}
	off, cnt := int(in[0]), int(in[1])
	if in[0] < 0 || in[1] < 0 || off+cnt > len(v[2]) || len(v[0]) != len(v[2]) || len(v[1]) != len(v[2]) {
		return 0, fmt.Errorf("vadd: chunk (%d, %d) outside buffers of %d floats", off, cnt, len(v[2]))
	}
	a, b, c := v[0][off:off+cnt], v[1][off:off+cnt], v[2][off:off+cnt]
	for i := range c {
		c[i] = a[i] + b[i]
	}
	out[0], out[1] = in[0], in[1]
	return 2, nil
}

var register = sync.OnceValue(func() error {
	return kernels.Register(kernels.Op{Name: opName, Buffers: 3, GoBuf: vadd, CUDA: opSource})
})

// maxN is the most elements: a chunk's offset and count travel as
// float32s, exact up to 2^24.
const maxN = 1 << 24

// share is one device's part of a run.
type share struct {
	device   int
	elements int
	chunks   int
	elapsed  time.Duration
}

// outcome is one partition's run.
type outcome struct {
	partition  string
	shares     []share
	elapsed    time.Duration
	mismatches int
}

func run(ctx context.Context, o options, w io.Writer) ([]outcome, error) {
	var parts []string
	switch o.partition {
	case "block", "cyclic":
		parts = []string{o.partition}
	case "both":
		parts = []string{"block", "cyclic"}
	default:
		return nil, fmt.Errorf("-partition %q: want block, cyclic or both", o.partition)
	}
	if o.n < 1 || o.n > maxN || o.chunk < 1 || o.devices < 0 {
		return nil, fmt.Errorf("want 1 <= -n <= %d, -chunk >= 1 and -devices >= 0", maxN)
	}
	if err := register(); err != nil {
		return nil, err
	}
	rt, err := ra.New(ra.Config{Devices: ra.DeviceOptions{Backend: o.backend}})
	if err != nil {
		return nil, err
	}
	defer rt.Close()
	reg := rt.Registry()
	gpus := reg.GPUs()
	if o.devices == 0 {
		o.devices = len(gpus)
	}
	if o.devices > len(gpus) {
		return nil, fmt.Errorf("-devices %d: the %s backend has %d GPUs (RINGACTOR_SIM_DEVICES or RINGACTOR_EMU_DEVICES set how many there are)", o.devices, reg.BackendName(), len(gpus))
	}
	devs := make([]int, o.devices)
	for i := range devs {
		devs[i] = gpus[i].ID
	}
	a, b := make([]float32, o.n), make([]float32, o.n)
	rng := rand.New(rand.NewPCG(o.seed, 37))
	for i := range a {
		a[i], b[i] = rng.Float32()*200-100, rng.Float32()*200-100
	}
	fmt.Fprintf(w, "vectoradd on %s: c = a + b, %d floats over devices %v, each device's part of a, b, c in its own buffers\n", reg.BackendName(), o.n, devs)
	var out []outcome
	for _, p := range parts {
		oc, err := runPartition(ctx, rt, o, p, devs, a, b)
		if err != nil {
			return out, fmt.Errorf("%s: %w", p, err)
		}
		report(w, o, oc)
		out = append(out, oc)
		if oc.mismatches > 0 {
			return out, fmt.Errorf("%s: %d mismatches", p, oc.mismatches)
		}
	}
	return out, nil
}

// chunk is a range of the global vectors and where it lives: device
// index d, at offset local of that device's buffers.
type chunk struct{ d, global, local, count int }

// partition deals [0, n) to d devices: block, one range each (the first
// n mod d one element longer); cyclic, chunks of size round-robin.
func partition(kind string, n, d, size int) (chunks []chunk, local []int) {
	local = make([]int, d) // elements each device holds so far
	if kind == "block" {
		for i, at := 0, 0; i < d; i++ {
			cnt := n / d
			if i < n%d {
				cnt++
			}
			if cnt > 0 {
				chunks = append(chunks, chunk{i, at, 0, cnt})
			}
			local[i], at = cnt, at+cnt
		}
		return chunks, local
	}
	for k, at := 0, 0; at < n; k, at = k+1, at+size {
		i := k % d
		cnt := min(size, n-at)
		chunks = append(chunks, chunk{i, at, local[i], cnt})
		local[i] += cnt
	}
	return chunks, local
}

// runPartition writes each device's part of a and b into its buffers,
// sends every chunk to its device's stage, reads c back and checks it.
func runPartition(ctx context.Context, rt *ra.Runtime, o options, kind string, devs []int, a, b []float32) (outcome, error) {
	chunks, held := partition(kind, o.n, len(devs), o.chunk)
	oc := outcome{partition: kind, shares: make([]share, len(devs))}
	type device struct {
		bufs [3]*ra.Buffer // a, b, c: the elements it holds, in chunk order
		p    *ra.Pipeline
		msgs []ra.Data
		last atomic.Int64  // when its latest chunk came back, since start (ns)
		back atomic.Int64  // chunks come back to the sink
		all  chan struct{} // closed by the sink when every chunk came back
	}
	// start is set just before the sends; the sinks read it (the race
	// detector does not see the order the device queues give).
	var start atomic.Int64
	ds := make([]device, len(devs))
	defer func() {
		for i := range ds {
			d := &ds[i]
			if d.p != nil {
				d.p.Close(context.WithoutCancel(ctx), false)
			}
			for _, buf := range d.bufs {
				if buf != nil {
					buf.Free()
				}
			}
		}
	}()
	// Each device's part of a and b, gathered in its chunks' order.
	parts := make([][2][]float32, len(devs))
	for _, c := range chunks {
		parts[c.d][0] = append(parts[c.d][0], a[c.global:c.global+c.count]...)
		parts[c.d][1] = append(parts[c.d][1], b[c.global:c.global+c.count]...)
		ds[c.d].msgs = append(ds[c.d].msgs, ra.Data{Floats: []float32{float32(c.local), float32(c.count)}})
	}
	for i, dev := range devs {
		oc.shares[i] = share{device: dev, elements: held[i], chunks: len(ds[i].msgs)}
		if held[i] == 0 {
			continue
		}
		for k := range ds[i].bufs {
			buf, err := rt.AllocBuffer(ctx, dev, 4*held[i])
			if err != nil {
				return oc, err
			}
			ds[i].bufs[k] = buf
		}
		for k, v := range parts[i] {
			if err := ds[i].bufs[k].WriteFloat32s(ctx, 0, v); err != nil {
				return oc, err
			}
		}
		d := &ds[i]
		d.all = make(chan struct{})
		p, err := rt.Build(ctx, ra.PipelineSpec{Name: fmt.Sprintf("vectoradd-%s-%d", kind, dev), Deliver: ra.Sink{Func: func(ra.Result) {
			d.last.Store(time.Now().UnixNano() - start.Load())
			if d.back.Add(1) == int64(len(d.msgs)) {
				close(d.all)
			}
		}}, Stages: []ra.StageSpec{{
			Name: "vadd", Op: opName, Device: dev,
			Buffers: []ra.BufferUse{{Buffer: ds[i].bufs[0]}, {Buffer: ds[i].bufs[1]}, {Buffer: ds[i].bufs[2], Write: true}},
		}}})
		if err != nil {
			return oc, err
		}
		ds[i].p = p
		if err := p.Start(ctx); err != nil {
			return oc, err
		}
	}
	// Every device at once; a device's time is from the start until its
	// last chunk came back.
	start.Store(time.Now().UnixNano())
	errs := make([]error, len(devs))
	var wg sync.WaitGroup
	for i := range ds {
		if ds[i].p == nil {
			continue
		}
		wg.Go(func() {
			p := ds[i].p
			if _, err := p.SendBatch(ctx, ds[i].msgs); err != nil {
				errs[i] = err
				return
			}
			if errs[i] = p.Idle(ctx); errs[i] != nil {
				return
			}
			if st := p.Stats(); st.DeadLettered > 0 {
				errs[i] = fmt.Errorf("device %d: %d chunks dead-lettered", devs[i], st.DeadLettered)
				return
			}
			// Idle counts a chunk delivered once its result is decoded;
			// the sink may still be handling the last one.
			select {
			case <-ds[i].all:
			case <-ctx.Done():
				errs[i] = ctx.Err()
				return
			}
			oc.shares[i].elapsed = time.Duration(ds[i].last.Load())
		})
	}
	wg.Wait()
	for _, s := range oc.shares {
		oc.elapsed = max(oc.elapsed, s.elapsed)
	}
	if err := errors.Join(errs...); err != nil {
		return oc, err
	}
	// c back from every device, scattered to its global place, checked.
	got := make([][]float32, len(devs))
	for i := range ds {
		if ds[i].p == nil {
			continue
		}
		got[i] = make([]float32, held[i])
		if err := ds[i].bufs[2].ReadFloat32s(ctx, 0, got[i]); err != nil {
			return oc, err
		}
	}
	for _, c := range chunks {
		for j := range c.count {
			if g := c.global + j; got[c.d][c.local+j] != a[g]+b[g] {
				oc.mismatches++
			}
		}
	}
	return oc, nil
}

// report prints a partition's shares and its check.
func report(w io.Writer, o options, oc outcome) {
	fmt.Fprintln(w)
	if oc.partition == "block" {
		fmt.Fprintln(w, "block: one contiguous range a device, one message each")
	} else {
		fmt.Fprintf(w, "cyclic: chunks of %d elements dealt round-robin, one message each\n", o.chunk)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "device\telements\tshare\tchunks\ttime\t")
	for _, s := range oc.shares {
		fmt.Fprintf(tw, "%d\t%d\t%.1f%%\t%d\t%v\t\n", s.device, s.elements, 100*float64(s.elements)/float64(o.n), s.chunks, s.elapsed.Round(time.Microsecond))
	}
	tw.Flush()
	fmt.Fprintf(w, "%s: %d elements in %v, %d mismatches\n", oc.partition, o.n, oc.elapsed.Round(time.Microsecond), oc.mismatches)
}
