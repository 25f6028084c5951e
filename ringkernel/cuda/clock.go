package cuda

import (
	"context"
	"errors"
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

// A calibration's bounds. A calibration takes up to clockPings exchanges;
// once clockBudget has passed it stops as soon as it has clockMinPings
// answers (a loaded host or GPU answers slowly, and a few slow exchanges
// give a worse, but still bounded, estimate). An attempt waits for each
// answer for its patience, which starts at firstPatience and doubles on
// each retry up to maxPatience; the retries, and the backoff between
// them, are bounded by the ctx of whoever opens the device (Build's, via
// ringkernel.DeviceOpener), or by openBound when a device opens without
// one. A recalibration is one attempt with recalibratePatience: when it
// fails or is late, the previous offset stays.
const (
	clockPings          = 32
	clockMinPings       = 3
	clockBudget         = 20 * time.Millisecond
	firstPatience       = 100 * time.Millisecond
	maxPatience         = 10 * time.Second
	recalibratePatience = time.Second
	openBound           = 2 * time.Minute
)

// errClockLate: the clock kernel did not answer within an attempt's
// patience (or its ctx ended first).
var errClockLate = errors.New("the clock kernel did not answer in time")

// startClock loads the clock kernel (kept loaded: no module is loaded or
// unloaded while ring kernels run), takes the first calibration, retrying
// with backoff within ctx, and starts the recalibration loop.
func (d *device) startClock(ctx context.Context) error {
	var err error
	if d.clock, err = d.load("ra_clock.ptx", []byte(clockPTX), "ra_clock"); err != nil {
		return err
	}
	start := time.Now()
	patience, wait := firstPatience, 10*time.Millisecond
	for attempt := 1; ; attempt++ {
		off, _, err := d.calibrate(ctx, patience)
		if err == nil {
			d.offset.Store(off)
			break
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%d attempt(s) over %v, the last: %w; the host or GPU is overloaded: give Build (or the call that opened the device) a longer ctx",
				attempt, time.Since(start).Round(time.Millisecond), err)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%d attempt(s) over %v, the last: %w; the host or GPU is overloaded: give Build (or the call that opened the device) a longer ctx",
				attempt, time.Since(start).Round(time.Millisecond), err)
		case <-t.C:
		}
		patience, wait = min(2*patience, maxPatience), min(2*wait, time.Second)
	}
	d.stopClock, d.clockDone = make(chan struct{}), make(chan struct{})
	go d.clockLoop()
	return nil
}

func (d *device) clockLoop() {
	defer close(d.clockDone)
	// The goroutine below reads its own copy: stopClockLoop clears the
	// field once this loop has returned, and the goroutine may not have
	// looked at it yet.
	stop := d.stopClock
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-stop:
			cancel() // a recalibration under way gives up
		case <-ctx.Done():
		}
	}()
	t := time.NewTicker(recalibrateEvery)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		d.mu.Lock()
		idle := len(d.live) == 0
		d.mu.Unlock()
		if idle {
			continue
		}
		off, _, err := d.calibrate(ctx, recalibratePatience)
		if err != nil {
			continue // late or failed: keep the last offset; the next tick tries again
		}
		d.offset.Store(off)
		d.mu.Lock()
		for l := range d.live {
			l.cb.SetClockOffset(off)
		}
		d.mu.Unlock()
	}
}

// stopClockLoop ends the recalibration loop, then waits for a clock kernel
// a late calibration left running (it has been told to end) and frees its
// buffer.
func (d *device) stopClockLoop() {
	if d.stopClock != nil {
		close(d.stopClock)
		<-d.clockDone
		d.stopClock = nil
	}
	d.clockMu.Lock()
	defer d.clockMu.Unlock()
	if d.clockHeld && d.clockStream != nil {
		// Polled, not synchronized: a synchronize behind a kernel that
		// does not end would never return. One that has not ended by
		// then keeps its buffer, and the arena's close reports it.
		if d.awaitClockKernel(context.Background(), maxPatience) == nil {
			d.pinArena.release(d.clockBuf)
			d.clockHeld = false
		}
	}
}

// calibrate estimates host ns minus device globaltimer ns by ping-pong
// over mapped pinned memory with the clock kernel: the host raises a flag,
// the kernel answers with its clock, and the tightest exchange is kept
// (its midpoint is off by at most half its round trip, which is returned).
// The kernel runs on the device's clock stream, made at open. Each answer
// is waited for patience at most, and no longer than ctx; a late answer
// ends the calibration with errClockLate. The clock kernel is then told to
// end, and its buffer is kept until it has (the next calibration, or
// stopClockLoop, frees it), since a late answer still writes into it.
func (d *device) calibrate(ctx context.Context, patience time.Duration) (int64, time.Duration, error) {
	d.clockMu.Lock()
	defer d.clockMu.Unlock()
	if d.clockHeld {
		// The last calibration's kernel may still run: wait for it, within
		// this attempt's bounds, before the stream takes another.
		if err := d.awaitClockKernel(ctx, patience); err != nil {
			return 0, 0, err
		}
		d.pinArena.release(d.clockBuf)
		d.clockHeld = false
	}
	const n = clockPings
	buf, off, err := d.pinArena.alloc(64 + 8*n)
	if err != nil {
		return 0, 0, err
	}
	flag := (*uint32)(unsafe.Pointer(&buf.Bytes[0]))
	slot := func(k int) *uint64 { return (*uint64)(unsafe.Pointer(&buf.Bytes[64+8*k])) }
	if err := d.ctx.Launch(d.clock, drv.Dim3{X: 1, Y: 1, Z: 1}, drv.Dim3{X: 1, Y: 1, Z: 1}, 0, d.clockStream,
		buf.Device, buf.Device+64, uint32(n)); err != nil {
		d.pinArena.release(off)
		return 0, 0, err
	}
	best, offset := time.Duration(1<<62), int64(0)
	var failed error
	start := time.Now()
	for k := range n {
		if k >= clockMinPings && time.Since(start) > clockBudget {
			break // enough: a slow host's exchanges will not get tighter
		}
		t0 := time.Now()
		atomic.StoreUint32(flag, uint32(k+1))
		var g uint64
		for spins := 0; ; spins++ {
			if g = atomic.LoadUint64(slot(k)); g != 0 {
				break
			}
			if spins < 4096 {
				continue // a GPU answers in microseconds: spin, to time it well
			}
			if late := time.Since(t0); late > patience || ctx.Err() != nil {
				failed = fmt.Errorf("%w: no answer to exchange %d of %d in %v (patience %v, ctx: %v)",
					errClockLate, k+1, n, late.Round(time.Millisecond), patience, ctx.Err())
				break
			}
			time.Sleep(min(time.Duration(spins/4096)*20*time.Microsecond, time.Millisecond)) // slow: let the host breathe
		}
		if failed != nil {
			break
		}
		if rt := time.Since(t0); rt < best {
			best, offset = rt, t0.UnixNano()+int64(rt/2)-int64(g)
		}
	}
	atomic.StoreUint32(flag, ^uint32(0)) // ends it whatever happened
	if err := d.awaitClockKernel(ctx, patience); err != nil {
		d.clockHeld, d.clockBuf = true, off // freed once it has ended
		if failed != nil {
			return 0, 0, failed
		}
		return 0, 0, err
	}
	d.pinArena.release(off)
	if failed != nil {
		return 0, 0, failed
	}
	return offset, best, nil
}

// awaitClockKernel waits until the clock stream is idle, polling it (a
// stream synchronize could wait forever behind a GPU that is not running
// it), for patience at most and within ctx.
func (d *device) awaitClockKernel(ctx context.Context, patience time.Duration) error {
	t0 := time.Now()
	for wait := 20 * time.Microsecond; ; wait = min(2*wait, 2*time.Millisecond) {
		done, err := d.clockStream.Query()
		if err != nil {
			return err
		}
		if done {
			return nil
		}
		if time.Since(t0) > patience || ctx.Err() != nil {
			return fmt.Errorf("%w: the clock kernel has not ended %v after it was told to (ctx: %v)", errClockLate, time.Since(t0).Round(time.Millisecond), ctx.Err())
		}
		time.Sleep(wait)
	}
}
