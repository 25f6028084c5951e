package cuda

import (
	"errors"
	"fmt"
	"sync"
	"time"

	drv "github.com/ringactor/ringactor/cuda"
	"github.com/ringactor/ringactor/kernels"
)

// device is one GPU as the backend uses it.
type device struct {
	id     int
	dev    *drv.Device
	ctx    *drv.Context
	sms    int
	offset int64 // host ns - device globaltimer ns

	devArena *deviceArena
	pinArena *pinnedArena

	mu      sync.Mutex
	modules map[string]*drv.Module // by op name and PTX hash
	blocks  int                    // ring kernels running (one block each)
}

func openDevice(b *Backend, id int) (*device, error) {
	dv, err := b.drv.Device(id)
	if err != nil {
		return nil, err
	}
	sms, err := dv.Attribute(drv.AttrMultiprocessorCount)
	if err != nil {
		return nil, err
	}
	if mapped, err := dv.Attribute(drv.AttrCanMapHostMemory); err != nil || mapped == 0 {
		return nil, fmt.Errorf("cannot map host memory (attribute %d, %v): ring kernels need mapped pinned memory for their control blocks", mapped, err)
	}
	ctx, err := dv.PrimaryContext()
	if err != nil {
		return nil, err
	}
	d := &device{id: id, dev: dv, ctx: ctx, sms: sms, modules: map[string]*drv.Module{}}
	fail := func(err error) (*device, error) {
		d.close()
		return nil, err
	}
	if d.devArena, err = newDeviceArena(ctx, b.opts.DeviceArena); err != nil {
		return fail(err)
	}
	if d.pinArena, err = newPinnedArena(ctx, b.opts.PinnedArena, false); err != nil {
		return fail(err)
	}
	if d.offset, err = calibrate(d); err != nil {
		return fail(fmt.Errorf("clock calibration: %w", err))
	}
	return d, nil
}

// running is the number of ring kernels on the device.
func (d *device) running() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.blocks
}

// kernelEnded accounts for an ended kernel.
func (d *device) kernelEnded() {
	d.mu.Lock()
	d.blocks--
	d.mu.Unlock()
}

// module returns the loaded module of op's ring kernel, loading it once.
func (d *device) module(op kernels.Op, ptx []byte) (*drv.Module, error) {
	key := op.Name + "\x00" + fmt.Sprint(len(ptx)) + "\x00" + hashPTX(ptx)
	d.mu.Lock()
	defer d.mu.Unlock()
	if m, ok := d.modules[key]; ok {
		return m, nil
	}
	m, err := d.ctx.LoadModule(kernels.Symbol(op.Name)+".ptx", ptx)
	if err != nil {
		return nil, err
	}
	d.modules[key] = m
	return m, nil
}

func (d *device) close() error {
	var errs []error
	for _, m := range d.modules {
		errs = append(errs, m.Unload())
	}
	d.modules = nil
	if d.devArena != nil {
		errs = append(errs, d.devArena.close())
	}
	if d.pinArena != nil {
		errs = append(errs, d.pinArena.close())
	}
	if d.ctx != nil {
		errs = append(errs, d.ctx.Release())
	}
	return errors.Join(errs...)
}

// hostTime converts a device globaltimer reading to host time.
func (d *device) hostTime(ns uint64) time.Time { return time.Unix(0, int64(ns)+d.offset) }
