package ringkernel_test

import (
	"os"
	"sync"
	"testing"

	"github.com/ringactor/ringactor/cuda/cudatest"
	"github.com/ringactor/ringactor/p2pqueue"
	rk "github.com/ringactor/ringactor/ringkernel"
	rkcuda "github.com/ringactor/ringactor/ringkernel/cuda"
	"github.com/ringactor/ringactor/ringkernel/sim"
)

// BackendEnv picks the backend the kernel suite runs on: "sim" (the
// default) or "cuda", which runs the same tests on GPU 0 (the GPU bundle
// sets it). Tests of what only the sim backend has (Go stage functions,
// their error texts, worker goroutines) skip on cuda with the reason.
const BackendEnv = "RINGACTOR_TEST_BACKEND"

var (
	cudaOnce    sync.Once
	cudaBackend *rkcuda.Backend
	cudaErr     error
)

func onCUDA() bool { return os.Getenv(BackendEnv) == "cuda" }

// testBackend is the backend under test; on sim, one with n devices. On
// cuda the kernels run on device 0 whatever device a test names, so tests
// ask for their device through testDevice.
func testBackend(t testing.TB, n int) rk.Backend {
	t.Helper()
	if !onCUDA() {
		return sim.New(n)
	}
	cudatest.Driver(t) // skips, or fails under RINGACTOR_REQUIRE_GPU=1
	cudaOnce.Do(func() { cudaBackend, cudaErr = rkcuda.New(rkcuda.Options{}) })
	if cudaErr != nil {
		t.Fatalf("cuda backend: %v", cudaErr)
	}
	return cudaBackend
}

// testDevice maps a test's device id onto the backend's devices.
func testDevice(d int) int {
	if onCUDA() {
		return 0
	}
	return d
}

// simOnly skips t on a device backend.
func simOnly(t testing.TB, why string) {
	t.Helper()
	if onCUDA() {
		t.Skipf("sim backend only: %s", why)
	}
}

// newLink makes a link the backend's kernels can use: Go memory on sim,
// mapped pinned memory on cuda.
func newLink(t testing.TB, capacity uint32, floats int) *p2pqueue.Link {
	t.Helper()
	cfg := p2pqueue.ConfigFor(capacity, 4*floats)
	if !onCUDA() {
		l, err := p2pqueue.NewHostQueue(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	b := testBackend(t, 0)
	n, err := cfg.RegionSize()
	if err != nil {
		t.Fatal(err)
	}
	r, err := b.Alloc(0, n, p2pqueue.MappedPinnedMemory)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Free(r) })
	l, err := p2pqueue.Init(r, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return l
}
