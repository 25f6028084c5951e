package devreg

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/ringactor/ringactor/kernels"
	"github.com/ringactor/ringactor/p2pqueue"
	rk "github.com/ringactor/ringactor/ringkernel"
	"github.com/ringactor/ringactor/ringkernel/devmem"
)

// Mux runs each device's kernels on the backend of its kind: the GPUs'
// backend (CUDA or sim) and the CPU's goroutine engine, behind the one
// Backend interface. The registry's device ids are global; each backend
// sees its own (a GPU keeps its id, the CPU is its engine's device 0).
// Regions it hands out carry the global id, so Free finds their backend.
type Mux struct {
	of        []route // by global device id
	gpus, cpu rk.Backend
	// bytes is the memory allocated on each device and not freed (links,
	// control blocks, trace rings), for Metrics.
	bytes []atomic.Int64
}

type route struct {
	b     rk.Backend
	local int
}

// NewMux joins gpus (whose devices are ids 0..n-1) and the CPU's engine
// (device n).
func NewMux(gpus rk.Backend, n int, cpu rk.Backend) *Mux {
	m := &Mux{gpus: gpus, cpu: cpu}
	for i := range n {
		m.of = append(m.of, route{gpus, i})
	}
	m.of = append(m.of, route{cpu, 0})
	m.bytes = make([]atomic.Int64, len(m.of))
	return m
}

// Name lists the backends: "cuda+cpu".
func (m *Mux) Name() string { return m.gpus.Name() + "+" + m.cpu.Name() }

// CPU is the CPU's engine.
func (m *Mux) CPU() rk.Backend { return m.cpu }

// Held is the memory allocated on device through m and not freed (0 for
// an id m does not route).
func (m *Mux) Held(device int) uint64 {
	if device < 0 || device >= len(m.bytes) {
		return 0
	}
	return uint64(max(m.bytes[device].Load(), 0))
}

func (m *Mux) route(device int) (route, error) {
	if device < 0 || device >= len(m.of) {
		return route{}, fmt.Errorf("%w %d: devices are 0..%d", rk.ErrNoDevice, device, len(m.of)-1)
	}
	return m.of[device], nil
}

// Alloc allocates on the backend of device's kind.
func (m *Mux) Alloc(device, size int, kind p2pqueue.MemoryKind) (p2pqueue.Region, error) {
	r, err := m.route(device)
	if err != nil {
		return p2pqueue.Region{}, err
	}
	reg, err := r.b.Alloc(r.local, size, kind)
	if err != nil {
		return reg, err
	}
	if reg.Device == r.local {
		reg.Device = device
	}
	m.bytes[device].Add(int64(reg.Len()))
	return reg, nil
}

// OpenDevice opens device on its backend, within ctx, where that backend
// has devices to open (rk.DeviceOpener).
func (m *Mux) OpenDevice(ctx context.Context, device int) error {
	r, err := m.route(device)
	if err != nil {
		return err
	}
	if o, ok := r.b.(rk.DeviceOpener); ok {
		return o.OpenDevice(ctx, r.local)
	}
	return nil
}

// Free returns a region to the backend that allocated it.
func (m *Mux) Free(reg p2pqueue.Region) error {
	r, err := m.route(reg.Device)
	if err != nil {
		return err
	}
	n, dev := int64(reg.Len()), reg.Device
	reg.Device = r.local
	if err := r.b.Free(reg); err != nil {
		return err
	}
	m.bytes[dev].Add(-n)
	return nil
}

// Start launches job on the backend of its device's kind.
func (m *Mux) Start(job *rk.Job) (rk.Loop, error) {
	r, err := m.route(job.Spec.Device)
	if err != nil {
		return nil, err
	}
	if r.local == job.Spec.Device && len(job.Spec.Stage.Buffers) == 0 {
		return r.b.Start(job)
	}
	local := *job
	local.Spec.Device = r.local
	local.Spec.Stage.Buffers = make([]rk.Binding, len(job.Spec.Stage.Buffers))
	for i, bd := range job.Spec.Stage.Buffers { // as the kernel's backend knows them
		br, err := m.route(bd.Buf.Device)
		if err != nil || br.b != r.b {
			return nil, fmt.Errorf("%w %q: bound buffer %d is on device %d, which the backend of device %d (%s) does not hold; allocate it on device %d", rk.ErrBadStage, job.Spec.Stage.Name, i, bd.Buf.Device, job.Spec.Device, r.b.Name(), job.Spec.Device)
		}
		local.Spec.Stage.Buffers[i] = bd
		local.Spec.Stage.Buffers[i].Buf.Device = br.local
	}
	return r.b.Start(&local)
}

// Supports asks the backend of device whether it can run op (a backend
// that is no rk.Supporter runs every op), and says the device's global id
// in its answer.
func (m *Mux) Supports(device int, op kernels.Op) error {
	r, err := m.route(device)
	if err != nil {
		return err
	}
	s, ok := r.b.(rk.Supporter)
	if !ok {
		return nil
	}
	err = s.Supports(r.local, op)
	if u, ok := errors.AsType[*rk.UnsupportedError](err); ok && u.Device == r.local {
		g := *u
		g.Device = device
		return &g
	}
	return err
}

// Sample reads each device's use from its backend (rk.Sampler), by global
// device id: the GPUs keep their ids, the CPU is its engine's device 0.
func (m *Mux) Sample() []rk.DeviceSample {
	sample := func(b rk.Backend) []rk.DeviceSample {
		if s, ok := b.(rk.Sampler); ok {
			return s.Sample()
		}
		return nil
	}
	out := make([]rk.DeviceSample, len(m.of))
	copy(out[:len(m.of)-1], sample(m.gpus))
	if c := sample(m.cpu); len(c) > 0 {
		out[len(m.of)-1] = c[0]
	}
	return out
}

// Close closes the backends that hold resources (the CUDA backend).
func (m *Mux) Close() error {
	var errs []error
	for _, b := range []rk.Backend{m.gpus, m.cpu} {
		if c, ok := b.(interface{ Close() error }); ok {
			errs = append(errs, c.Close())
		}
	}
	return errors.Join(errs...)
}

// buffers is the devmem.Backend of device's backend, and the buffer b as
// that backend knows it (its local device id).
func (m *Mux) buffers(b devmem.Buffer) (devmem.Backend, devmem.Buffer, error) {
	r, err := m.route(b.Device)
	if err != nil {
		return nil, b, err
	}
	mb, ok := r.b.(devmem.Backend)
	if !ok {
		return nil, b, fmt.Errorf("%w: the %s backend of device %d has no buffers (it does not implement devmem.Backend); use a backend that does (sim, cuda)", ErrBackend, r.b.Name(), b.Device)
	}
	b.Device = r.local
	return mb, b, nil
}

// global is b, allocated on the backend of global device id device, with
// that id.
func global(b devmem.Buffer, device int) devmem.Buffer { b.Device = device; return b }

// AllocBuffer allocates a buffer on the backend of device's kind
// (devmem.Backend); the buffer carries the global id.
func (m *Mux) AllocBuffer(ctx context.Context, device, size int, kind devmem.Kind) (devmem.Buffer, error) {
	mb, local, err := m.buffers(devmem.Buffer{Device: device})
	if err != nil {
		return devmem.Buffer{}, err
	}
	b, err := mb.AllocBuffer(ctx, local.Device, size, kind)
	if oom, ok := errors.AsType[*devmem.OutOfMemoryError](err); ok && oom.Device == local.Device {
		g := *oom
		g.Device = device
		return devmem.Buffer{}, &g
	}
	if err != nil {
		return devmem.Buffer{}, err
	}
	return global(b, device), nil
}

// Write copies src into b at off on b's backend.
func (m *Mux) Write(ctx context.Context, b devmem.Buffer, off int, src []byte) error {
	mb, local, err := m.buffers(b)
	if err != nil {
		return err
	}
	return mb.Write(ctx, local, off, src)
}

// Read copies b's bytes at off into dst on b's backend.
func (m *Mux) Read(ctx context.Context, b devmem.Buffer, off int, dst []byte) error {
	mb, local, err := m.buffers(b)
	if err != nil {
		return err
	}
	return mb.Read(ctx, local, off, dst)
}

var _ devmem.Backend = (*Mux)(nil)

// hostChunk is the most a copy between two backends holds in host memory
// at once, in a buffer of hostPool (reused: fresh memory's page faults
// would be most of what a copy costs).
const hostChunk = 4 << 20

var hostPool = sync.Pool{New: func() any { b := make([]byte, hostChunk); return &b }}

// Copy copies between two buffers: on their backend when one backend has
// both (a peer, staged or local copy, as it decides), else through host
// memory a chunk at a time (p2pqueue.PathHost: one end is the CPU).
func (m *Mux) Copy(ctx context.Context, dst devmem.Buffer, dstOff int, src devmem.Buffer, srcOff, n int) (p2pqueue.Path, error) {
	db, dl, err := m.buffers(dst)
	if err != nil {
		return 0, err
	}
	sb, sl, err := m.buffers(src)
	if err != nil {
		return 0, err
	}
	if db == sb {
		return sb.Copy(ctx, dl, dstOff, sl, srcOff, n)
	}
	if err := devmem.CheckRange("copy source", src, srcOff, n); err != nil {
		return 0, err
	}
	if err := devmem.CheckRange("copy destination", dst, dstOff, n); err != nil {
		return 0, err
	}
	hp := hostPool.Get().(*[]byte)
	defer hostPool.Put(hp)
	host := *hp
	for done := 0; done < n; {
		k := min(n-done, len(host))
		if err := sb.Read(ctx, sl, srcOff+done, host[:k]); err != nil {
			return p2pqueue.PathHost, err
		}
		if err := db.Write(ctx, dl, dstOff+done, host[:k]); err != nil {
			return p2pqueue.PathHost, err
		}
		done += k
	}
	return p2pqueue.PathHost, nil
}

// FreeBuffer gives b back to its backend.
func (m *Mux) FreeBuffer(b devmem.Buffer) error {
	mb, local, err := m.buffers(b)
	if err != nil {
		return err
	}
	return mb.FreeBuffer(local)
}
