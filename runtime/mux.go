package runtime

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/ringactor/ringactor/kernels"
	"github.com/ringactor/ringactor/p2pqueue"
	rk "github.com/ringactor/ringactor/ringkernel"
)

// devices runs each device's kernels on the backend of its kind: the GPUs'
// backend (CUDA or sim) and the CPU's goroutine engine, behind the one
// Backend interface. The registry's device ids are global; each backend
// sees its own (a GPU keeps its id, the CPU is its engine's device 0).
// Regions it hands out carry the global id, so Free finds their backend.
type devices struct {
	of        []devRoute // by global device id
	gpus, cpu rk.Backend
	// bytes is the memory allocated on each device and not freed (links,
	// control blocks, trace rings), for Metrics.
	bytes []atomic.Int64
}

type devRoute struct {
	b     rk.Backend
	local int
}

// newDevices joins gpus (whose devices are ids 0..n-1) and the CPU's
// engine (device n).
func newDevices(gpus rk.Backend, n int, cpu rk.Backend) *devices {
	d := &devices{gpus: gpus, cpu: cpu}
	for i := range n {
		d.of = append(d.of, devRoute{gpus, i})
	}
	d.of = append(d.of, devRoute{cpu, 0})
	d.bytes = make([]atomic.Int64, len(d.of))
	return d
}

// Name lists the backends: "cuda+cpu".
func (d *devices) Name() string { return d.gpus.Name() + "+" + d.cpu.Name() }

func (d *devices) route(device int) (devRoute, error) {
	if device < 0 || device >= len(d.of) {
		return devRoute{}, fmt.Errorf("%w %d: devices are 0..%d", ErrNoDevice, device, len(d.of)-1)
	}
	return d.of[device], nil
}

// Alloc allocates on the backend of device's kind.
func (d *devices) Alloc(device, size int, kind p2pqueue.MemoryKind) (p2pqueue.Region, error) {
	r, err := d.route(device)
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
	d.bytes[device].Add(int64(reg.Len()))
	return reg, nil
}

// OpenDevice opens device on its backend, within ctx, where that backend
// has devices to open (rk.DeviceOpener).
func (d *devices) OpenDevice(ctx context.Context, device int) error {
	r, err := d.route(device)
	if err != nil {
		return err
	}
	if o, ok := r.b.(rk.DeviceOpener); ok {
		return o.OpenDevice(ctx, r.local)
	}
	return nil
}

// Free returns a region to the backend that allocated it.
func (d *devices) Free(reg p2pqueue.Region) error {
	r, err := d.route(reg.Device)
	if err != nil {
		return err
	}
	n, dev := int64(reg.Len()), reg.Device
	reg.Device = r.local
	if err := r.b.Free(reg); err != nil {
		return err
	}
	d.bytes[dev].Add(-n)
	return nil
}

// Start launches job on the backend of its device's kind.
func (d *devices) Start(job *rk.Job) (rk.Loop, error) {
	r, err := d.route(job.Spec.Device)
	if err != nil {
		return nil, err
	}
	if r.local == job.Spec.Device {
		return r.b.Start(job)
	}
	local := *job
	local.Spec.Device = r.local
	return r.b.Start(&local)
}

// Supports asks the backend of device whether it can run op (a backend
// that is no rk.Supporter runs every op), and says the device's global id
// in its answer.
func (d *devices) Supports(device int, op kernels.Op) error {
	r, err := d.route(device)
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
func (d *devices) Sample() []rk.DeviceSample {
	sample := func(b rk.Backend) []rk.DeviceSample {
		if s, ok := b.(rk.Sampler); ok {
			return s.Sample()
		}
		return nil
	}
	out := make([]rk.DeviceSample, len(d.of))
	copy(out[:len(d.of)-1], sample(d.gpus))
	if c := sample(d.cpu); len(c) > 0 {
		out[len(d.of)-1] = c[0]
	}
	return out
}

// close closes the backends that hold resources (the CUDA backend).
func (d *devices) close() error {
	var errs []error
	for _, b := range []rk.Backend{d.gpus, d.cpu} {
		if c, ok := b.(interface{ Close() error }); ok {
			errs = append(errs, c.Close())
		}
	}
	return errors.Join(errs...)
}
