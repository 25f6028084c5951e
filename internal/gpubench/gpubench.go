// Package gpubench measures ring kernels on a real GPU against the
// conventional path, in one run: (a) a 64-byte message host -> ring kernel
// -> host, (b) the same work as a kernel launch per message with copies and
// a synchronize, (c) one hop between two ring kernels through a link in
// device memory (from the device timestamps of sampled messages), and (d)
// batched 64-byte messages through the 3-stage pipeline on one GPU.
package gpubench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	drv "github.com/ringactor/ringactor/cuda"
	"github.com/ringactor/ringactor/internal/bench"
	"github.com/ringactor/ringactor/kernels"
	"github.com/ringactor/ringactor/p2pqueue"
	rk "github.com/ringactor/ringactor/ringkernel"
	rkcuda "github.com/ringactor/ringactor/ringkernel/cuda"
)

// Row is a benchmark row; Ratio is this row's msgs/s over its
// baseline's (for latency rows msgs/s is 1/p50, so the ratio is the
// baseline's p50 over this one's).
type Row = bench.Row

// Options sizes the run.
type Options struct {
	Samples  int // round trips and launches measured (default 20000)
	Messages int // messages through the pipeline (default 2,000,000)
	Progress io.Writer
}

// Run measures all four on GPU 0.
func Run(ctx context.Context, b *rkcuda.Backend, o Options) ([]Row, error) {
	if o.Samples <= 0 {
		o.Samples = 20000
	}
	if o.Messages <= 0 {
		o.Messages = 2_000_000
	}
	say := func(f string, a ...any) {
		if o.Progress != nil {
			fmt.Fprintf(o.Progress, f+"\n", a...)
		}
	}
	say("gpubench: (a) ring-kernel round trip, %d samples", o.Samples)
	rt, err := roundTrip(ctx, b, o.Samples)
	if err != nil {
		return nil, fmt.Errorf("round trip: %w", err)
	}
	say("gpubench: (b) launch per message, %d samples", o.Samples)
	base, err := launchPerMessage(ctx, b, o.Samples)
	if err != nil {
		return nil, fmt.Errorf("launch baseline: %w", err)
	}
	say("gpubench: (c) hop between two ring kernels, %d samples", o.Samples/4)
	hop, err := hop(ctx, b, o.Samples/4)
	if err != nil {
		return nil, fmt.Errorf("hop: %w", err)
	}
	say("gpubench: (d) 3-stage pipeline, %d messages", o.Messages)
	rate, err := pipeline(ctx, b, o.Messages)
	if err != nil {
		return nil, fmt.Errorf("pipeline: %w", err)
	}
	p := func(d []time.Duration, q float64) int64 { return int64(d[int(q*float64(len(d)-1))]) }
	rows := []Row{
		{Name: "gpu/round-trip-64B", Backend: "cuda", P50: p(rt, .5), P99: p(rt, .99), Baseline: "gpu/launch-per-message-64B"},
		{Name: "gpu/launch-per-message-64B", Backend: "cuda", P50: p(base, .5), P99: p(base, .99)},
		{Name: "gpu/hop-device-link", Backend: "cuda", P50: p(hop, .5), P99: p(hop, .99)},
		{Name: "gpu/pipeline-3stage-64B", Backend: "cuda", MsgsPerSec: rate},
	}
	rows[0].MsgsPerSec = 1e9 / float64(rows[0].P50)
	rows[1].MsgsPerSec = 1e9 / float64(rows[1].P50)
	rows[0].Ratio = float64(rows[1].P50) / float64(rows[0].P50)
	return rows, nil
}

type rig struct {
	b       *rkcuda.Backend
	regions []p2pqueue.Region
	kernels []*rk.Kernel
}

func (r *rig) link(kind p2pqueue.MemoryKind, capacity uint32, floats int) (*p2pqueue.Link, error) {
	cfg := p2pqueue.ConfigFor(capacity, 4*floats)
	n, err := cfg.RegionSize()
	if err != nil {
		return nil, err
	}
	reg, err := r.b.Alloc(0, n, kind)
	if err != nil {
		return nil, err
	}
	r.regions = append(r.regions, reg)
	return p2pqueue.Init(reg, cfg)
}

func (r *rig) launch(ctx context.Context, spec rk.Spec) error {
	k, err := rk.Launch(ctx, r.b, spec)
	if err != nil {
		return err
	}
	r.kernels = append(r.kernels, k)
	return k.Activate(ctx)
}

func (r *rig) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, k := range r.kernels {
		k.Terminate(ctx, false)
	}
	for _, reg := range r.regions {
		r.b.Free(reg)
	}
}

// roundTrip sends one 64-byte message at a time through an identity ring
// kernel and spins for its return.
func roundTrip(ctx context.Context, b *rkcuda.Backend, n int) ([]time.Duration, error) {
	r := &rig{b: b}
	defer r.close()
	in, err := r.link(p2pqueue.MappedPinnedMemory, 64, 16)
	if err != nil {
		return nil, err
	}
	out, err := r.link(p2pqueue.MappedPinnedMemory, 64, 16)
	if err != nil {
		return nil, err
	}
	if err := r.launch(ctx, rk.Spec{Stage: rk.Stage{Name: "echo", Op: "identity"}, In: []*p2pqueue.Link{in}, Out: out}); err != nil {
		return nil, err
	}
	send, _ := in.Producer()
	recv, _ := out.Consumer()
	msg := p2pqueue.Message{Payload: kernels.EncodeFloats(nil, make([]float32, 16))}
	var got p2pqueue.Message
	lat := make([]time.Duration, 0, n)
	for i := range n + n/10 { // the first tenth warms up
		msg.ID = uint64(i)
		t0 := time.Now()
		if err := send.TryEnqueue(&msg); err != nil {
			return nil, err
		}
		for {
			err := recv.TryDequeue(&got)
			if err == nil {
				break
			}
			if !errors.Is(err, p2pqueue.ErrEmpty) {
				return nil, err
			}
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
		}
		if i >= n/10 {
			lat = append(lat, time.Since(t0))
		}
	}
	slices.Sort(lat)
	return lat, nil
}

// launchPerMessage does the same work the conventional way: copy in,
// launch the stage's one-shot kernel, copy out, synchronize.
func launchPerMessage(ctx context.Context, b *rkcuda.Backend, n int) ([]time.Duration, error) {
	d := b.Driver()
	dev, err := d.Device(0)
	if err != nil {
		return nil, err
	}
	c, err := dev.PrimaryContext()
	if err != nil {
		return nil, err
	}
	defer c.Release()
	ptx, _ := kernels.ShippedPTX("identity")
	m, err := c.LoadModule("identity.ptx", ptx)
	if err != nil {
		return nil, err
	}
	defer m.Unload()
	f, err := m.Function(kernels.Symbol("identity") + "_test")
	if err != nil {
		return nil, err
	}
	s, err := c.NewStream()
	if err != nil {
		return nil, err
	}
	defer s.Destroy()
	buf, err := c.Alloc(256)
	if err != nil {
		return nil, err
	}
	defer c.Free(buf)
	host := make([]byte, 64)
	lat := make([]time.Duration, 0, n)
	one := drv.Dim3{X: 1, Y: 1, Z: 1}
	for i := range n + n/10 {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		t0 := time.Now()
		if err := c.CopyToDevice(buf, host); err != nil {
			return nil, err
		}
		// (params, state, in, n, out, out_cap, ret)
		if err := c.Launch(f, one, drv.Dim3{X: 32, Y: 1, Z: 1}, 0, s, buf, buf, buf, int32(16), buf+64, int32(16), buf+192); err != nil {
			return nil, err
		}
		if err := s.Synchronize(); err != nil {
			return nil, err
		}
		if err := c.CopyFromDevice(host, buf+64); err != nil {
			return nil, err
		}
		if i >= n/10 {
			lat = append(lat, time.Since(t0))
		}
	}
	slices.Sort(lat)
	return lat, nil
}

// hop times stage 1's done to stage 2's dequeue of the same message on the
// device clock: two ring kernels on one GPU joined by a device-memory link.
func hop(ctx context.Context, b *rkcuda.Backend, n int) ([]time.Duration, error) {
	r := &rig{b: b}
	defer r.close()
	in, err := r.link(p2pqueue.MappedPinnedMemory, 64, 16)
	if err != nil {
		return nil, err
	}
	mid, err := r.link(p2pqueue.DeviceMemory, 64, 16)
	if err != nil {
		return nil, err
	}
	var mu sync.Mutex
	done := map[uint64]time.Time{}
	var lat []time.Duration
	got := make(chan struct{}, 1)
	on1 := func(t rk.TraceRecord) { mu.Lock(); done[t.ID] = t.Done; mu.Unlock() }
	on2 := func(t rk.TraceRecord) {
		mu.Lock()
		if d, ok := done[t.ID]; ok {
			lat = append(lat, t.Dequeued.Sub(d))
		}
		mu.Unlock()
		got <- struct{}{}
	}
	if err := r.launch(ctx, rk.Spec{Stage: rk.Stage{Name: "a", Op: "identity"}, ID: 1, In: []*p2pqueue.Link{in}, Out: mid, OutLocal: true, OnTrace: on1}); err != nil {
		return nil, err
	}
	if err := r.launch(ctx, rk.Spec{Stage: rk.Stage{Name: "b", Op: "identity"}, ID: 2, In: []*p2pqueue.Link{mid}, InLocal: []bool{true}, OnTrace: on2}); err != nil {
		return nil, err
	}
	send, _ := in.Producer()
	msg := p2pqueue.Message{Header: p2pqueue.Header{Flags: p2pqueue.FlagSampled}, Payload: kernels.EncodeFloats(nil, make([]float32, 16))}
	for i := range n {
		msg.ID = uint64(i)
		if err := send.Enqueue(ctx, &msg); err != nil {
			return nil, err
		}
		select {
		case <-got:
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(5 * time.Second):
			return nil, fmt.Errorf("message %d: no trace record from the second kernel in 5 s", i)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(lat) == 0 {
		return nil, fmt.Errorf("no hop measured")
	}
	slices.Sort(lat)
	return lat, nil
}

// pipeline pushes batched 64-byte messages through x*2 -> sqrt -> +1 on one
// GPU and returns messages per second end to end.
func pipeline(ctx context.Context, b *rkcuda.Backend, total int) (float64, error) {
	r := &rig{b: b}
	defer r.close()
	in, err := r.link(p2pqueue.MappedPinnedMemory, 4096, 16)
	if err != nil {
		return 0, err
	}
	l1, err := r.link(p2pqueue.DeviceMemory, 4096, 16)
	if err != nil {
		return 0, err
	}
	l2, err := r.link(p2pqueue.DeviceMemory, 4096, 16)
	if err != nil {
		return 0, err
	}
	out, err := r.link(p2pqueue.MappedPinnedMemory, 4096, 16)
	if err != nil {
		return 0, err
	}
	specs := []rk.Spec{
		{Stage: rk.Stage{Name: "x2", Op: "scale", Params: []float32{2}}, ID: 1, In: []*p2pqueue.Link{in}, Out: l1, OutLocal: true},
		{Stage: rk.Stage{Name: "sqrt", Op: "sqrt"}, ID: 2, In: []*p2pqueue.Link{l1}, InLocal: []bool{true}, Out: l2, OutLocal: true},
		{Stage: rk.Stage{Name: "plus1", Op: "offset", Params: []float32{1}}, ID: 3, In: []*p2pqueue.Link{l2}, InLocal: []bool{true}, Out: out},
	}
	for _, s := range specs {
		if err := r.launch(ctx, s); err != nil {
			return 0, err
		}
	}
	send, _ := in.Producer()
	recv, _ := out.Consumer()
	payload := kernels.EncodeFloats(nil, make([]float32, 16))
	errc := make(chan error, 1)
	start := time.Now()
	go func() {
		batch := make([]p2pqueue.Message, 256)
		for i := range batch {
			batch[i].Payload = payload
		}
		for i := 0; i < total; {
			k, err := send.EnqueueBatch(ctx, batch[:min(len(batch), total-i)])
			i += k
			if err != nil {
				errc <- err
				return
			}
		}
		errc <- nil
	}()
	msgs := make([]p2pqueue.Message, 256)
	for got := 0; got < total; {
		k, err := recv.DequeueBatch(ctx, msgs)
		got += k
		if err != nil {
			return 0, fmt.Errorf("after %d messages: %w", got, err)
		}
	}
	el := time.Since(start)
	if err := <-errc; err != nil {
		return 0, err
	}
	return float64(total) / el.Seconds(), nil
}
