package gpubench

import (
	"context"
	_ "embed"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync/atomic"
	"time"
	"unsafe"

	drv "github.com/ringactor/ringactor/cuda"
	"github.com/ringactor/ringactor/cuda/hostbuild"
	"github.com/ringactor/ringactor/cuda/nvrtc"
	"github.com/ringactor/ringactor/kernels"
	rk "github.com/ringactor/ringactor/ringkernel"
	rkcuda "github.com/ringactor/ringactor/ringkernel/cuda"
)

// floorsSource is the floors' and microbenchmarks' CUDA source.
//
//go:embed floors.cu
var floorsSource string

// Word offsets of floors.cu (GB_* in host memory H, GD_* in device
// memory D), in u64 words.
const (
	gbPing, gbPong, gbN, gbMode, gbArg, gbDone, gbWord = 0, 16, 32, 33, 34, 48, 64
	gbWords                                            = 128
	gdA, gdB, gdCyc, gdNs, gdSamples                   = 0, 16, 24, 25, 1024
)

// The microbenchmarks' modes (GB_M_* of floors.cu).
const (
	mStRelSys = iota
	mStRelGPU
	mFenceSys
	mFenceGPU
	mLdAcqSys
	mLdVolatile
	mNanosleep
)

// Floor and microbenchmark row names.
const (
	rowFloorMapped = "floor/mapped-pingpong"
	rowFloorDevice = "floor/device-pingpong"
)

// micro is one microbenchmark: its row, mode, argument (outstanding
// stores, or ns asked to sleep) and the row it is compared with.
type micro struct {
	name, vs string
	mode     int
	arg      uint64
}

// micros lists the microbenchmarks in the order they run and print.
func micros() []micro {
	var ms []micro
	for _, st := range []uint64{0, 1, 32} {
		ms = append(ms,
			micro{fmt.Sprintf("micro/st.release.gpu/%d-stores", st), "", mStRelGPU, st},
			micro{fmt.Sprintf("micro/st.release.sys/%d-stores", st), fmt.Sprintf("micro/st.release.gpu/%d-stores", st), mStRelSys, st},
			micro{fmt.Sprintf("micro/fence.acq_rel.gpu/%d-stores", st), "", mFenceGPU, st},
			micro{fmt.Sprintf("micro/fence.acq_rel.sys/%d-stores", st), fmt.Sprintf("micro/fence.acq_rel.gpu/%d-stores", st), mFenceSys, st})
	}
	ms = append(ms, micro{"micro/ld.volatile-host", "", mLdVolatile, 0}, micro{"micro/ld.acquire.sys-host", "micro/ld.volatile-host", mLdAcqSys, 0})
	for _, ns := range []uint64{100, 1000, 10000} {
		ms = append(ms, micro{fmt.Sprintf("micro/nanosleep/%dns", ns), "", mNanosleep, ns})
	}
	return ms
}

// floors is the floors' module on GPU 0 and the memory its kernels use:
// H (mapped pinned host memory) and D (device memory), a stream each for
// two kernels at once.
type floors struct {
	c       *drv.Context
	m       *drv.Module
	fn      map[string]*drv.Function
	h       *drv.HostMemory
	d       drv.DevicePtr
	dn      int // D's samples room
	s       [2]*drv.Stream
	emu     bool
	ghzNote string
}

// floorKernels are floors.cu's entry points.
var floorKernels = []string{"ra_gb_mapped_ring", "ra_gb_devping_a_ring", "ra_gb_devping_b_ring", "ra_gb_micro_ring"}

// newFloors compiles floors.cu with NVRTC for GPU 0 (and, over the
// emulated driver, builds it for the host) and loads it. It must run
// while no ring kernel runs on the device (a module load then could wait
// for them forever; the emulated driver refuses it).
func newFloors(b *rkcuda.Backend, samples int) (f *floors, err error) {
	d := b.Driver()
	dev, err := d.Device(0)
	if err != nil {
		return nil, err
	}
	major, minor, err := dev.ComputeCapability()
	if err != nil {
		return nil, err
	}
	n, err := nvrtc.Load()
	if err != nil {
		return nil, err
	}
	src := drv.Source{Name: "gpubench_floors.cu", Code: floorsSource, Headers: kernels.Headers()}
	ptx, err := n.PTX(src.Name, src.Code, src.Headers, fmt.Sprintf("compute_%d%d", major, minor), kernels.CompileOptions...)
	if err != nil {
		return nil, fmt.Errorf("compiling floors.cu: %w", err)
	}
	f = &floors{fn: map[string]*drv.Function{}, dn: samples, emu: hostbuild.Supported(d)}
	built := f // an error returns a nil f: close what was built
	defer func() {
		if err != nil {
			built.close()
		}
	}()
	if f.emu {
		if err := hostbuild.Build(d, ptx, src); err != nil {
			return nil, fmt.Errorf("building floors.cu for the emulated driver: %w", err)
		}
	}
	if f.c, err = dev.PrimaryContext(); err != nil {
		return nil, err
	}
	if f.m, err = f.c.LoadModule("gpubench_floors.ptx", ptx); err != nil {
		return nil, err
	}
	for _, k := range floorKernels {
		if f.fn[k], err = f.m.Function(k); err != nil {
			return nil, err
		}
	}
	if f.h, err = f.c.AllocHost(8*gbWords, false); err != nil {
		return nil, err
	}
	if f.d, err = f.c.Alloc(8 * (gdSamples + samples)); err != nil {
		return nil, err
	}
	for i := range f.s {
		if f.s[i], err = f.c.NewStream(); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// close frees it all; every kernel of it has ended (run waits for each).
func (f *floors) close() {
	if f.c == nil {
		return
	}
	for _, s := range f.s {
		if s != nil {
			s.Destroy()
		}
	}
	if f.d != 0 {
		f.c.Free(f.d)
	}
	if f.h != nil {
		f.c.FreeHost(f.h)
	}
	if f.m != nil {
		f.m.Unload()
	}
	f.c.Release()
}

// word is H's u64 word i, for atomic access: the kernels read and write
// it concurrently.
func (f *floors) word(i int) *uint64 { return (*uint64)(unsafe.Pointer(&f.h.Bytes[8*i])) }

// args is the argument block: H and D, nothing else.
func (f *floors) args() []byte {
	a := make([]byte, rk.ArgSize)
	binary.LittleEndian.PutUint64(a[rk.ArgOffCtrl:], uint64(f.h.Device))
	binary.LittleEndian.PutUint64(a[rk.ArgOffParams:], uint64(f.d))
	return a
}

// reset zeroes H's flags and sets its parameters for the next kernel.
func (f *floors) reset(n, mode, arg uint64) {
	for _, w := range []int{gbPing, gbPong, gbDone, gbWord} {
		atomic.StoreUint64(f.word(w), 0)
	}
	atomic.StoreUint64(f.word(gbN), n)
	atomic.StoreUint64(f.word(gbMode), mode)
	atomic.StoreUint64(f.word(gbArg), arg)
}

// waitDone waits for a kernel to set GB_DONE, then for its streams.
func (f *floors) waitDone(ctx context.Context, what string) error {
	deadline := time.Now().Add(30 * time.Second)
	for spins := 0; atomic.LoadUint64(f.word(gbDone)) == 0; spins++ {
		if spins%256 == 255 {
			if ctx.Err() != nil {
				atomic.StoreUint64(f.word(gbPing), ^uint64(0))
				return ctx.Err()
			}
			if time.Now().After(deadline) {
				atomic.StoreUint64(f.word(gbPing), ^uint64(0))
				return fmt.Errorf("%s: the kernel did not finish in 30 s", what)
			}
			runtime.Gosched()
		}
	}
	return errors.Join(f.s[0].Synchronize(), f.s[1].Synchronize())
}

// samples copies D's first n samples out.
func (f *floors) samples(n int) ([]uint64, error) {
	buf := make([]byte, 8*n)
	if err := f.c.CopyFromDevice(buf, f.d+drv.DevicePtr(8*gdSamples)); err != nil {
		return nil, err
	}
	out := make([]uint64, n)
	for i := range out {
		out[i] = binary.LittleEndian.Uint64(buf[8*i:])
	}
	return out, nil
}

// mapped runs k rounds of the mapped-memory ping-pong and appends each
// round trip as the host saw it to lat.
func (f *floors) mapped(ctx context.Context, k int, lat *[]time.Duration) error {
	f.reset(uint64(k), 0, 0)
	if err := f.c.Launch(f.fn["ra_gb_mapped_ring"], drv.Dim3{X: 1, Y: 1, Z: 1}, drv.Dim3{X: 1, Y: 1, Z: 1}, 0, f.s[0], f.args()); err != nil {
		return err
	}
	ping, pong := f.word(gbPing), f.word(gbPong)
	deadline := time.Now().Add(30 * time.Second)
	for i := 1; i <= k; i++ {
		t0 := time.Now()
		atomic.StoreUint64(ping, uint64(i))
		for spins := 0; atomic.LoadUint64(pong) < uint64(i); spins++ {
			if spins%1024 == 1023 && (ctx.Err() != nil || time.Now().After(deadline)) {
				atomic.StoreUint64(ping, ^uint64(0))
				f.waitDone(context.Background(), "mapped ping-pong")
				return errors.Join(ctx.Err(), errors.New("mapped ping-pong: no answer in 30 s"))
			}
		}
		if lat != nil {
			*lat = append(*lat, time.Since(t0))
		}
	}
	return f.waitDone(ctx, "mapped ping-pong")
}

// device runs n rounds of the device ping-pong between two one-thread
// kernels and returns the one-way times: half of each round trip the
// first kernel timed.
func (f *floors) device(ctx context.Context, n int) ([]time.Duration, error) {
	n = min(n, f.dn)
	if err := f.c.Memset(f.d, 0, 8*gdSamples); err != nil {
		return nil, err
	}
	f.reset(uint64(n), 0, 0)
	one := drv.Dim3{X: 1, Y: 1, Z: 1}
	if err := f.c.Launch(f.fn["ra_gb_devping_b_ring"], one, one, 0, f.s[1], f.args()); err != nil {
		return nil, err
	}
	if err := f.c.Launch(f.fn["ra_gb_devping_a_ring"], one, one, 0, f.s[0], f.args()); err != nil {
		ones := make([]byte, 8) // let B run out its rounds and end
		binary.LittleEndian.PutUint64(ones, ^uint64(0))
		return nil, errors.Join(err, f.c.CopyToDevice(f.d+8*gdA, ones), f.s[1].Synchronize())
	}
	if err := f.waitDone(ctx, "device ping-pong"); err != nil {
		return nil, err
	}
	raw, err := f.samples(n)
	if err != nil {
		return nil, err
	}
	lat := make([]time.Duration, 0, n)
	for _, v := range raw[n/10:] { // the first tenth warms up
		lat = append(lat, time.Duration(v/2))
	}
	slices.Sort(lat)
	return lat, nil
}

// micro runs one microbenchmark for n samples and returns them in ns
// (cycles converted at the rate the kernel measured over its run; the
// sleeps are ns already) and that rate in GHz.
func (f *floors) micro(ctx context.Context, m micro, n int) ([]time.Duration, float64, error) {
	n = min(n, f.dn)
	f.reset(uint64(n), uint64(m.mode), m.arg)
	one := drv.Dim3{X: 1, Y: 1, Z: 1}
	if err := f.c.Launch(f.fn["ra_gb_micro_ring"], one, one, 0, f.s[0], f.args()); err != nil {
		return nil, 0, err
	}
	if err := f.waitDone(ctx, m.name); err != nil {
		return nil, 0, err
	}
	raw, err := f.samples(n)
	if err != nil {
		return nil, 0, err
	}
	clk := make([]byte, 16)
	if err := f.c.CopyFromDevice(clk, f.d+drv.DevicePtr(8*gdCyc)); err != nil {
		return nil, 0, err
	}
	cyc, ns := binary.LittleEndian.Uint64(clk), binary.LittleEndian.Uint64(clk[8:])
	ghz := 1.0
	if ns > 0 && cyc > 0 {
		ghz = float64(cyc) / float64(ns)
	}
	lat := make([]time.Duration, 0, n)
	for _, v := range raw[n/10:] {
		if m.mode == mNanosleep {
			lat = append(lat, time.Duration(v))
		} else {
			lat = append(lat, time.Duration(float64(v)/ghz))
		}
	}
	slices.Sort(lat)
	return lat, ghz, nil
}

// floorStats measures the device ping-pong floor and every
// microbenchmark: the stats, each compared with its cheaper twin.
func floorStats(ctx context.Context, f *floors, n int, emu bool) ([]Stat, error) {
	lat, err := f.device(ctx, n)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", rowFloorDevice, err)
	}
	d := stat(rowFloorDevice, "", lat, emu)
	d.Note = "two one-thread kernels on GPU 0 ping-pong a flag in its memory at GPU scope: half a round trip, on the device's clock (the hop floor)"
	out := []Stat{d}
	for _, m := range micros() {
		lat, ghz, err := f.micro(ctx, m, n)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", m.name, err)
		}
		s := stat(m.name, "", lat, emu)
		switch {
		case m.mode == mNanosleep:
			s.Note = fmt.Sprintf("asked %v; p50 slept %.2fx that", time.Duration(m.arg), float64(s.P50)/float64(m.arg))
		case emu:
			s.Note = "the host build's C++ atomic at the same order, in ns of the CPU's clock"
		default:
			s.Note = fmt.Sprintf("cycles (clock64) at %.2f GHz, one thread", ghz)
		}
		if m.vs != "" {
			if base, ok := find(out, m.vs); ok {
				s = against(s, base)
			}
		}
		out = append(out, s)
	}
	return out, nil
}

// settle waits, over the emulated driver, until no kernel it counts as a
// ring kernel runs on GPU 0 (device attribute 9101, the emulator's own):
// the device's clock kernel may still be answering a recalibration that
// began while earlier kernels ran (the benchmark's, or the ledger's
// before it), and a module load, unload or free beside it is refused
// there. A GPU's driver waits for that short kernel
// itself. Bounded: 5 s, then the close goes ahead.
func settle(b *rkcuda.Backend, emu bool) {
	if !emu {
		return
	}
	dev, err := b.Driver().Device(0)
	if err != nil {
		return
	}
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if n, err := dev.Attribute(9101); err != nil || n == 0 {
			return
		}
	}
}
