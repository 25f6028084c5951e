package cuda

import (
	"encoding/binary"
	"fmt"
	"time"

	drv "github.com/ringactor/ringactor/cuda"
)

// clockPTX is a one-thread kernel that stores %globaltimer: small enough to
// write by hand, so calibration needs no compiler.
const clockPTX = `.version 7.0
.target sm_70
.address_size 64
.visible .entry ra_clock(.param .u64 out)
{
	.reg .b64 %rd<4>;
	ld.param.u64 %rd1, [out];
	cvta.to.global.u64 %rd2, %rd1;
	mov.u64 %rd3, %globaltimer;
	st.global.u64 [%rd2], %rd3;
	ret;
}
`

// Recalibration period while ring kernels run: the device's globaltimer
// and the host's clock drift apart (and the host's may be slewed), so the
// offset kernels add to their times is re-estimated and pushed to each
// running kernel's control block.
const recalibrateEvery = time.Second

// startClock loads the clock kernel (kept loaded: no module is loaded or
// unloaded while ring kernels run), takes the first calibration, and
// starts the recalibration loop.
func (d *device) startClock() error {
	m, err := d.loadModule("ra_clock.ptx", []byte(clockPTX))
	if err != nil {
		return err
	}
	if d.clock, err = m.Function("ra_clock"); err != nil {
		return err
	}
	off, _, err := d.calibrate()
	if err != nil {
		return err
	}
	d.offset.Store(off)
	d.stopClock, d.clockDone = make(chan struct{}), make(chan struct{})
	go d.clockLoop()
	return nil
}

func (d *device) clockLoop() {
	defer close(d.clockDone)
	t := time.NewTicker(recalibrateEvery)
	defer t.Stop()
	for {
		select {
		case <-d.stopClock:
			return
		case <-t.C:
		}
		d.mu.Lock()
		idle := len(d.live) == 0
		d.mu.Unlock()
		if idle {
			continue
		}
		off, _, err := d.calibrate()
		if err != nil {
			continue // keep the last offset; the next tick tries again
		}
		d.offset.Store(off)
		d.mu.Lock()
		for l := range d.live {
			l.cb.SetClockOffset(off)
		}
		d.mu.Unlock()
	}
}

func (d *device) stopClockLoop() {
	if d.stopClock != nil {
		close(d.stopClock)
		<-d.clockDone
		d.stopClock = nil
	}
}

// calibrate estimates host ns minus device globaltimer ns: the clock kernel
// runs between two host readings, and the tightest of a few tries is kept
// (its midpoint is off by at most half its round trip, which it returns).
// It runs on a stream of its own, so it waits for nothing but itself.
func (d *device) calibrate() (int64, time.Duration, error) {
	buf, off, err := d.pinArena.alloc(8)
	if err != nil {
		return 0, 0, err
	}
	defer d.pinArena.release(off)
	s, err := d.ctx.NewStream()
	if err != nil {
		return 0, 0, err
	}
	defer s.Destroy()
	best, offset := time.Duration(1<<62), int64(0)
	for range 5 {
		t0 := time.Now()
		if err := d.ctx.Launch(d.clock, drv.Dim3{X: 1, Y: 1, Z: 1}, drv.Dim3{X: 1, Y: 1, Z: 1}, 0, s, buf.Device); err != nil {
			return 0, 0, err
		}
		if err := s.Synchronize(); err != nil {
			return 0, 0, err
		}
		t1 := time.Now()
		g := binary.LittleEndian.Uint64(buf.Bytes)
		if rt := t1.Sub(t0); rt < best {
			best, offset = rt, t0.UnixNano()+int64(rt/2)-int64(g)
		}
	}
	if best > time.Second {
		return 0, 0, fmt.Errorf("the clock kernel took %v", best)
	}
	return offset, best, nil
}
