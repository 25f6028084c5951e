package cuda

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"testing"
	"time"

	drv "github.com/ringactor/ringactor/cuda"
	"github.com/ringactor/ringactor/cuda/cudatest"
	"github.com/ringactor/ringactor/kernels"
	"github.com/ringactor/ringactor/p2pqueue"
	rk "github.com/ringactor/ringactor/ringkernel"
)

// These tests settle on a real GPU what reading the driver's documentation
// cannot: they skip without one (fail under RINGACTOR_REQUIRE_GPU=1), and
// log what they measured for the GPU notes in docs/BENCHMARKS.md.

func gpuBackend(t *testing.T, opts Options) *Backend {
	t.Helper()
	cudatest.Driver(t)
	b, err := New(opts)
	if err != nil {
		t.Fatalf("cuda backend: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := b.Shutdown(ctx); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return b
}

// spin launches an identity sink kernel on device 0, active, terminated at
// cleanup before its memory is freed.
func spin(t *testing.T, b *Backend, id uint32) *rk.Kernel {
	t.Helper()
	in := pinnedLink(t, b)
	k, err := rk.Launch(context.Background(), b, rk.Spec{Stage: rk.Stage{Name: fmt.Sprint("spin", id), Op: "identity", Stateful: true}, ID: id, In: []*p2pqueue.Link{in}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := k.Terminate(ctx, false); err != nil {
			t.Errorf("terminate %d: %v", id, err)
		}
	})
	return k
}

// pinnedLink is a small link in mapped pinned memory on device 0, freed at
// cleanup (after the kernels reading it, whose cleanups come later).
func pinnedLink(t *testing.T, b *Backend) *p2pqueue.Link {
	t.Helper()
	return pinnedLinkOf(t, b, p2pqueue.ConfigFor(64, 64))
}

// pinnedLinkOf is pinnedLink of configuration cfg.
func pinnedLinkOf(t *testing.T, b *Backend, cfg p2pqueue.Config) *p2pqueue.Link {
	t.Helper()
	n, err := cfg.RegionSize()
	if err != nil {
		t.Fatal(err)
	}
	r, err := b.Alloc(0, n, p2pqueue.MappedPinnedMemory)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Free(r) })
	in, err := p2pqueue.Init(r, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return in
}

// Loading a module while a ring kernel spins: under the CUDA_MODULE_LOADING
// this process runs with, does cuModuleLoadData return, or wait for the
// device? Either way the backend must not hang: a wait ends once the
// kernel is terminated. The backend refuses such loads unless
// RINGACTOR_LIVE_MODULE_LOAD=1, and that refusal is checked here too.
func TestGPUModuleLoadWhileKernelSpins(t *testing.T) {
	cudatest.RealGPU(t, "what a real driver's module load does under a spinning kernel (the emulator refuses it: TestEmulatorRules)")
	if os.Getenv(drv.ModuleLoadingEnv) == "LAZY" {
		cudatest.Driver(t)
		if _, err := New(Options{}); !errors.Is(err, ErrLazyLoading) {
			t.Fatalf("New under CUDA_MODULE_LOADING=LAZY: %v, want ErrLazyLoading", err)
		}
		t.Logf("GPU-NOTE CUDA_MODULE_LOADING=LAZY: the backend refuses, naming the fix")
		return
	}
	b := gpuBackend(t, Options{})
	k := spin(t, b, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := k.Activate(ctx); err != nil {
		t.Fatal(err)
	}
	d, err := b.device(0)
	if err != nil {
		t.Fatal(err)
	}
	user := kernels.Op{Name: "gpu.probe", CUDA: "never compiled"}
	if _, err := d.kernel(user, []byte("// a module not loaded yet\n"+clockPTX)); !errors.Is(err, ErrModuleWhileRunning) && !liveModuleLoad() {
		t.Fatalf("a new module while a kernel runs: %v, want ErrModuleWhileRunning", err)
	}
	done := make(chan error, 1)
	start := time.Now()
	go func() {
		m, err := d.ctx.LoadModule("probe.ptx", []byte("// probe "+time.Now().String()+"\n"+clockPTX))
		if err == nil {
			_, err = m.Function("ra_clock")
		}
		done <- err
	}()
	mode := os.Getenv(drv.ModuleLoadingEnv)
	select {
	case err := <-done:
		t.Logf("GPU-NOTE module load while a ring kernel spins (%s=%s): returned in %v (err %v)", drv.ModuleLoadingEnv, mode, time.Since(start), err)
	case <-time.After(5 * time.Second):
		if err := k.Terminate(ctx, false); err != nil {
			t.Fatalf("module load blocked, and terminate failed: %v", err)
		}
		select {
		case err := <-done:
			t.Logf("GPU-NOTE module load while a ring kernel spins (%s=%s): BLOCKED until the kernel ended (err %v)", drv.ModuleLoadingEnv, mode, err)
		case <-time.After(10 * time.Second):
			t.Fatal("module load still blocked after the kernel ended")
		}
	}
}

// The clock: globaltimer's step, the calibration's round trip, and the
// drift of host minus device over a few seconds.
func TestGPUClockAgainstHost(t *testing.T) {
	cudatest.RealGPU(t, "%globaltimer's resolution and drift against the host clock (a hand-written PTX probe)")
	b := gpuBackend(t, Options{})
	d, err := b.device(0)
	if err != nil {
		t.Fatal(err)
	}
	type sample struct {
		at  time.Time
		off int64
		rt  time.Duration
	}
	var ss []sample
	for range 16 {
		off, rt, err := d.calibrate(context.Background(), recalibratePatience)
		if err != nil {
			t.Fatal(err)
		}
		ss = append(ss, sample{time.Now(), off, rt})
		time.Sleep(200 * time.Millisecond)
	}
	first, last := ss[0], ss[len(ss)-1]
	drift := float64(last.off-first.off) / last.at.Sub(first.at).Seconds()
	rts := make([]time.Duration, len(ss))
	spread := int64(0)
	for i, s := range ss {
		rts[i] = s.rt
		spread = max(spread, abs(s.off-first.off))
	}
	sort.Slice(rts, func(i, j int) bool { return rts[i] < rts[j] })
	// The timer's step: consecutive reads of a spinning probe.
	step, err := timerStep(d)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("GPU-NOTE clock: globaltimer step %v; calibration round trip min %v median %v; offset spread %v over %v; drift %.0f ns/s",
		step, rts[0], rts[len(rts)/2], time.Duration(spread), last.at.Sub(first.at).Round(time.Millisecond), drift)
	if rts[0] > time.Millisecond {
		t.Errorf("best calibration round trip %v: the offset is uncertain by half of that", rts[0])
	}
}

func abs(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

// timerProbePTX stores n consecutive globaltimer readings.
const timerProbePTX = `.version 7.0
.target sm_70
.address_size 64
.visible .entry ra_timer_probe(.param .u64 out, .param .u32 n)
{
	.reg .b64 %rd<6>;
	.reg .b32 %r<3>;
	.reg .pred %p;
	ld.param.u64 %rd1, [out];
	cvta.to.global.u64 %rd2, %rd1;
	ld.param.u32 %r1, [n];
	mov.u32 %r2, 0;
LOOP:
	mov.u64 %rd3, %globaltimer;
	mul.wide.u32 %rd4, %r2, 8;
	add.s64 %rd5, %rd2, %rd4;
	st.global.u64 [%rd5], %rd3;
	add.u32 %r2, %r2, 1;
	setp.lt.u32 %p, %r2, %r1;
	@%p bra LOOP;
	ret;
}
`

// timerStep is the smallest nonzero difference between consecutive
// globaltimer readings of a kernel reading it in a loop.
func timerStep(d *device) (time.Duration, error) {
	f, err := d.load("ra_timer_probe.ptx", []byte(timerProbePTX), "ra_timer_probe")
	if err != nil {
		return 0, err
	}
	const n = 4096
	buf, off, err := d.pinArena.alloc(8 * n)
	if err != nil {
		return 0, err
	}
	defer d.pinArena.release(off)
	s, err := d.ctx.NewStream()
	if err != nil {
		return 0, err
	}
	defer s.Destroy()
	if err := d.ctx.Launch(f, drv.Dim3{X: 1, Y: 1, Z: 1}, drv.Dim3{X: 1, Y: 1, Z: 1}, 0, s, buf.Device, uint32(n)); err != nil {
		return 0, err
	}
	if err := s.Synchronize(); err != nil {
		return 0, err
	}
	step := time.Duration(1 << 62)
	prev := le64(buf.Bytes[0:])
	for i := 1; i < n; i++ {
		v := le64(buf.Bytes[8*i:])
		if v > prev {
			step = min(step, time.Duration(v-prev))
		}
		prev = v
	}
	return step, nil
}

func le64(b []byte) uint64 {
	return uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 | uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
}

// As many ring kernels as the backend allows on a device all run at once
// (a launched kernel that never starts never acknowledges Activate), and
// the next is refused with the fix named. The cap follows the hardware
// queues (CUDA_DEVICE_MAX_CONNECTIONS): past them, streams share queues.
func TestGPUConcurrentGridLimit(t *testing.T) {
	b := gpuBackend(t, Options{Threads: 32})
	limit := b.opts.MaxKernels
	ks := make([]*rk.Kernel, limit)
	for i := range ks {
		ks[i] = spin(t, b, uint32(i+1))
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := ks[i].Activate(ctx)
		cancel()
		if err != nil {
			t.Fatalf("ring kernel %d of %d did not start: %v", i+1, limit, err)
		}
	}
	_, err := rk.Launch(context.Background(), b, rk.Spec{Stage: rk.Stage{Name: "one-too-many", Op: "identity"}, In: []*p2pqueue.Link{pinnedLink(t, b)}})
	if !errors.Is(err, ErrTooManyKernels) {
		t.Fatalf("kernel %d: %v, want ErrTooManyKernels", limit+1, err)
	}
	t.Logf("GPU-NOTE concurrent ring kernels: %d of %d started (%s=%s); the next was refused", limit, limit, drv.MaxConnectionsEnv, os.Getenv(drv.MaxConnectionsEnv))
}

// The default cap refuses the kernel past it, with the fix in the error.
func TestTooManyKernelsRefused(t *testing.T) {
	d := &device{id: 0, sms: 100, live: map[*loop]struct{}{}, maxKernels: 2}
	for range 2 {
		if err := d.reserve(nil, "s", 32, 8); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.reserve(nil, "third", 32, 8); !errors.Is(err, ErrTooManyKernels) {
		t.Fatalf("third kernel: %v, want ErrTooManyKernels", err)
	}
}
