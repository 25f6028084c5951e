package cuda

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	drv "github.com/ringactor/ringactor/cuda"
	"github.com/ringactor/ringactor/cuda/cudatest"
	"github.com/ringactor/ringactor/kernels"
	"github.com/ringactor/ringactor/p2pqueue"
	rk "github.com/ringactor/ringactor/ringkernel"
)

// Under CUDA_LAUNCH_BLOCKING=1 the first persistent kernel would never
// return to its host: refuse before touching the driver.
func TestRefusesLaunchBlocking(t *testing.T) {
	t.Setenv("CUDA_LAUNCH_BLOCKING", "1")
	if _, err := New(Options{}); !errors.Is(err, ErrLaunchBlocking) {
		t.Fatalf("New under CUDA_LAUNCH_BLOCKING=1: %v, want ErrLaunchBlocking", err)
	}
	b := &Backend{}
	if _, err := b.Start(nil); !errors.Is(err, ErrLaunchBlocking) {
		t.Fatalf("Start under CUDA_LAUNCH_BLOCKING=1: %v", err)
	}
	t.Setenv("CUDA_LAUNCH_BLOCKING", "0")
	if err := checkLaunchBlocking(); err != nil {
		t.Fatalf("CUDA_LAUNCH_BLOCKING=0: %v", err)
	}
}

// Under CUDA_MODULE_LOADING=LAZY the first launch of a kernel loads it,
// which waits for the ring kernels already running: refuse up front.
func TestRefusesLazyModuleLoading(t *testing.T) {
	t.Setenv(drv.ModuleLoadingEnv, "LAZY")
	if _, err := New(Options{}); !errors.Is(err, ErrLazyLoading) {
		t.Fatalf("New under CUDA_MODULE_LOADING=LAZY: %v, want ErrLazyLoading", err)
	}
	t.Setenv(drv.ModuleLoadingEnv, "EAGER")
	if _, err := New(Options{}); errors.Is(err, ErrLazyLoading) {
		t.Fatal("refused under EAGER")
	}
}

// Without a driver New says so, wrapping cuda.ErrNoDriver. The driver is
// loaded once per process, so a wrong path set here would poison every
// later test of the process (the GPU tests among them): the check runs in
// a child process of its own.
func TestNoDriverIsAnError(t *testing.T) {
	if os.Getenv("RINGACTOR_TEST_CHILD") == "no-driver" {
		_, err := New(Options{})
		if !errors.Is(err, drv.ErrNoDriver) {
			fmt.Printf("New without a driver: %v, want ErrNoDriver\n", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^TestNoDriverIsAnError$")
	cmd.Env = append(os.Environ(), "RINGACTOR_TEST_CHILD=no-driver", drv.DriverEnv+"=/nonexistent/libcuda.so.1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	// This process can still load the real driver afterwards.
	if _, err := drv.LoadDriver(); err != nil && !errors.Is(err, drv.ErrNoDriver) {
		t.Logf("driver here: %v", err)
	}
}

// The co-residency budget refuses the block that would not fit and says
// how many fit.
func TestReserveRefusesWhatWouldNotBeCoResident(t *testing.T) {
	d := &device{id: 3, sms: 2, live: map[*loop]struct{}{}}
	for i := range 4 {
		if err := d.reserve(nil, "s", 256, 2); err != nil {
			t.Fatalf("block %d of 4 that fit: %v", i, err)
		}
	}
	err := d.reserve(nil, "fifth", 256, 2)
	if !errors.Is(err, ErrNoFit) {
		t.Fatalf("fifth block: %v, want ErrNoFit", err)
	}
	for _, want := range []string{`"fifth"`, "device 3", "4 blocks of 256 threads fit", "2 per SM x 2 SMs", "4 ring kernels already run"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	d.kernelEnded(nil)
	if err := d.reserve(nil, "again", 256, 2); err != nil {
		t.Fatalf("after one ended: %v", err)
	}
}

func TestBadThreadCountsRefused(t *testing.T) {
	for _, n := range []int{33, 2048} {
		if _, err := New(Options{Threads: n}); err == nil || !strings.Contains(err.Error(), "threads per block") {
			t.Errorf("%d threads: %v", n, err)
		}
	}
}

// A module not loaded yet is refused while ring kernels run on the device
// (on an H100 such a load waited for them, under EAGER and LAZY alike),
// before any driver call; a loaded one is served.
func TestNewModuleRefusedWhileKernelsRun(t *testing.T) {
	t.Setenv(LiveModuleLoadEnv, "")
	d := &device{id: 2, blocks: 1, modules: map[string]loaded{}, live: map[*loop]struct{}{}}
	_, err := d.kernel(kernels.Op{Name: "user.op"}, []byte("ptx"))
	if !errors.Is(err, ErrModuleWhileRunning) {
		t.Fatalf("a new module with a kernel running: %v, want ErrModuleWhileRunning", err)
	}
	for _, want := range []string{"user.op", "device 2", LiveModuleLoadEnv} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	fn := &drv.Function{}
	d.modules[hashPTX([]byte("ptx"))] = loaded{&drv.Module{}, fn}
	if f, err := d.kernel(kernels.Op{Name: "user.op"}, []byte("ptx")); err != nil || f != fn {
		t.Fatalf("a loaded module: %v, %v", f, err)
	}
}

// Close frees the portable (staged-link) arena while the context it was
// made in is still held (it used to free it after releasing that context,
// and Close failed with "context was released").
func TestCloseFreesThePortableArena(t *testing.T) {
	cudatest.Driver(t)
	b, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := b.Alloc(0, 4096, p2pqueue.PortablePinnedMemory)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Free(r); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatalf("Close after a portable allocation: %v", err)
	}
}

// A stage with more steal links than the device loop forwards into is
// refused at Start, before the driver is touched, with the limit named.
func TestTooManyStealLinksRefused(t *testing.T) {
	job := &rk.Job{Spec: rk.Spec{Stage: rk.Stage{Name: "victim", Op: "identity"}},
		In: make([]*p2pqueue.Consumer, 1), StealTo: make([]*p2pqueue.Producer, rk.MaxDeviceStealLinks+1)}
	_, err := (&Backend{}).Start(job)
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("has %d steal links; a device loop forwards stolen work into at most %d", rk.MaxDeviceStealLinks+1, rk.MaxDeviceStealLinks)) {
		t.Fatalf("%d steal links: %v", rk.MaxDeviceStealLinks+1, err)
	}
}
