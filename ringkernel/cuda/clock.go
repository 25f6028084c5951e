package cuda

import (
	"fmt"
	"sync/atomic"
	"time"
	"unsafe"

	drv "github.com/ringactor/ringactor/cuda"
)

// clockPTX is a one-thread ping-pong kernel: for k = 0..n-1 it waits
// until the host's flag word reaches k+1, then stores %globaltimer into
// out[k] at once (volatile global accesses are relaxed at system scope).
// A flag of 0xffffffff ends it early. Small enough to write by hand, so
// calibration needs no compiler.
const clockPTX = `.version 7.0
.target sm_70
.address_size 64
.visible .entry ra_clock(.param .u64 flag, .param .u64 out, .param .u32 n)
{
	.reg .b64 %rd<8>;
	.reg .b32 %r<6>;
	.reg .pred %p<4>;
	ld.param.u64 %rd1, [flag];
	cvta.to.global.u64 %rd1, %rd1;
	ld.param.u64 %rd2, [out];
	cvta.to.global.u64 %rd2, %rd2;
	ld.param.u32 %r1, [n];
	mov.u32 %r2, 0;
NEXT:
	setp.ge.u32 %p1, %r2, %r1;
	@%p1 bra DONE;
	add.u32 %r3, %r2, 1;
WAIT:
	ld.volatile.global.u32 %r4, [%rd1];
	setp.eq.u32 %p2, %r4, 0xffffffff;
	@%p2 bra DONE;
	setp.lt.u32 %p3, %r4, %r3;
	@%p3 bra WAIT;
	mov.u64 %rd3, %globaltimer;
	mul.wide.u32 %rd4, %r2, 8;
	add.s64 %rd5, %rd2, %rd4;
	st.volatile.global.u64 [%rd5], %rd3;
	mov.u32 %r2, %r3;
	bra NEXT;
DONE:
	ret;
}
`

// Recalibration period while ring kernels run: the device's globaltimer
// and the host's clock drift apart (18 us/s on an H100 VM, so about 2 us
// between calibrations at this period), so the
// offset kernels add to their times is re-estimated and pushed to each
// running kernel's control block.
const recalibrateEvery = 100 * time.Millisecond

// startClock loads the clock kernel (kept loaded: no module is loaded or
// unloaded while ring kernels run), takes the first calibration, and
// starts the recalibration loop.
func (d *device) startClock() error {
	var err error
	if d.clock, err = d.load("ra_clock.ptx", []byte(clockPTX), "ra_clock"); err != nil {
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

// calibrate estimates host ns minus device globaltimer ns by ping-pong
// over mapped pinned memory with the clock kernel: the host raises a flag,
// the kernel answers with its clock, and the tightest exchange is kept
// (its midpoint is off by at most half its round trip, which is returned).
// The kernel runs on the device's clock stream, made at open.
func (d *device) calibrate() (int64, time.Duration, error) {
	const n = 32
	buf, off, err := d.pinArena.alloc(64 + 8*n)
	if err != nil {
		return 0, 0, err
	}
	defer d.pinArena.release(off)
	flag := (*uint32)(unsafe.Pointer(&buf.Bytes[0]))
	slot := func(k int) *uint64 { return (*uint64)(unsafe.Pointer(&buf.Bytes[64+8*k])) }
	if err := d.ctx.Launch(d.clock, drv.Dim3{X: 1, Y: 1, Z: 1}, drv.Dim3{X: 1, Y: 1, Z: 1}, 0, d.clockStream,
		buf.Device, buf.Device+64, uint32(n)); err != nil {
		return 0, 0, err
	}
	best, offset := time.Duration(1<<62), int64(0)
	var failed error
	for k := range n {
		t0 := time.Now()
		atomic.StoreUint32(flag, uint32(k+1))
		var g uint64
		for spins := 0; ; spins++ {
			if g = atomic.LoadUint64(slot(k)); g != 0 {
				break
			}
			if spins%1024 == 1023 && time.Since(t0) > 100*time.Millisecond {
				failed = fmt.Errorf("the clock kernel did not answer in %v", time.Since(t0))
				break
			}
		}
		if failed != nil {
			break
		}
		if rt := time.Since(t0); rt < best {
			best, offset = rt, t0.UnixNano()+int64(rt/2)-int64(g)
		}
	}
	atomic.StoreUint32(flag, ^uint32(0)) // ends it whatever happened
	if err := d.clockStream.Synchronize(); err != nil {
		return 0, 0, err
	}
	if failed != nil {
		return 0, 0, failed
	}
	return offset, best, nil
}
