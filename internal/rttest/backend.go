package rttest

import (
	"fmt"
	"io"
	"os"
	"slices"
	"testing"

	"github.com/ringactor/ringactor/cuda/cudatest"
	ra "github.com/ringactor/ringactor/runtime"
)

// BackendEnv picks the devices the runtime-level suites (runtime,
// runtime/group, runtime/collective, the examples) run on:
//
//	sim   simulated GPUs (the default)
//	cpu   the CPU device: every device a case names is the CPU (a case
//	      that needs several distinct devices gets the CPU and then
//	      simulated GPUs)
//	cuda  the GPUs of the CUDA backend (a GPU, or the emulated driver
//	      through RINGACTOR_LIBCUDA); skipped without a driver, failed
//	      instead under RINGACTOR_REQUIRE_GPU=1
//
// `make test` runs the suites under each. The ring-kernel backends'
// conformance suite is package ringkernel/ringkerneltest, which takes the
// backend as an argument instead.
const BackendEnv = "RINGACTOR_TEST_BACKEND"

// The values of BackendEnv.
const (
	Sim  = "sim"
	CPU  = "cpu"
	CUDA = "cuda"
)

// Backend is the backend under test: BackendEnv, sim when unset.
func Backend() string {
	switch b := os.Getenv(BackendEnv); b {
	case "", Sim:
		return Sim
	case CPU, CUDA:
		return b
	default:
		panic(fmt.Sprintf("rttest: %s=%q: want %s, %s or %s", BackendEnv, b, Sim, CPU, CUDA))
	}
}

// Capability is something a runtime-level case needs of the devices under
// test beyond running built-in ops. Lacks says, in one place, which
// backend lacks which and why; a case that needs one calls Need.
type Capability int

//go:generate stringer -type=Capability -linecomment

const (
	// SimTopology: the devices are simulated GPUs whose topology the case
	// sets (SimP2P), so it can check where links are placed.
	SimTopology Capability = iota + 1 // a simulated topology
	// Steal: work stealing between a group's instances (CmdSteal).
	Steal // work stealing
	// SimDevices: the case is written for simulated GPUs it sets up
	// itself (a topology, sim sizes, Go stages, panics or stalls on them).
	// Elsewhere it skips: the sim pass runs it.
	SimDevices // simulated GPUs of the case's own
	// SimCost: a per-message service time the case sets on a device
	// (DeviceOptions.SimCost), to make devices unequal.
	SimCost // simulated service times
	// SimMemory: a device memory size the case sets
	// (DeviceOptions.SimMemoryOf), for memory-aware placement.
	SimMemory // simulated memory sizes
	// ErrorTexts: a stage function's dead letters carry its error's text,
	// not only its code (ringkerneltest.ErrorTexts).
	ErrorTexts // stage error texts
	// SimMetrics: the GPUs' memory metrics are the simulated devices'
	// (their set size, only the runtime's memory in use). Utilization
	// from the kernels' busy time is every backend's.
	SimMetrics // simulated GPU metrics
	// PayloadBytes: a link's byte metrics count the messages' payloads
	// (every backend's now: the CUDA device loop counts them too).
	PayloadBytes // payload byte counts
)

// Lacks is the skip table of the runtime-level suites: per backend, each
// capability it lacks and why.
var Lacks = map[string]map[Capability]string{
	Sim: {},
	CPU: {
		SimDevices:  "the case sets up simulated GPUs itself (a topology, their sizes, Go stages, panics or stalls on them): the sim pass runs it",
		SimTopology: "every stage a case places is on the one CPU device, whose links are host memory: no peer or staged links to check",
		SimCost:     "simulated service times are set per simulated GPU; the case's devices are the CPU",
		SimMemory:   "the CPU's memory is the host's, not a size the case sets",
	},
	CUDA: {
		SimDevices:  "the case sets up simulated GPUs itself (a topology, their sizes, Go stages, panics or stalls on them): the sim pass runs it",
		SimTopology: "the links follow the GPUs' real topology, not the simulated one the case sets",
		SimCost:     "simulated service times are a sim backend option",
		SimMemory:   "the GPUs' memory is what the driver reports, not a size the case sets",
		ErrorTexts:  "device code reports an ErrorCode, not the stage function's error text",
		SimMetrics:  "a GPU's memory is what the driver (and NVML, on a GPU) reports, not the simulated devices' 16 GiB with only the runtime's memory in use",
	},
}

// Has reports whether the backend under test has c.
func Has(c Capability) bool {
	_, lacks := Lacks[Backend()][c]
	return !lacks
}

// Why is the reason the backend under test lacks c, or "" when it has it:
// for a case that checks less, not nothing, without c.
func Why(c Capability) string { return Lacks[Backend()][c] }

// Need skips t, with the reason from Lacks, when the backend under test
// lacks c.
func Need(t testing.TB, c Capability) {
	t.Helper()
	if why, lacks := Lacks[Backend()][c]; lacks {
		t.Skipf("%s backend has no %s: %s", Backend(), c, why)
	}
}

// Devices makes a runtime on the devices under test. On sim and cpu it is
// sim's: simulated GPUs as opts says (Backend "sim"), then the CPU; on
// cuda the GPUs there (opts' sim fields are not used), skipping t without
// a driver (failing it under RINGACTOR_REQUIRE_GPU=1). Cases name their
// devices through Env.Device and Env.DeviceSet.
func Devices(t testing.TB, opts ra.DeviceOptions) *Env {
	t.Helper()
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	switch Backend() {
	case CUDA:
		cudatest.Device(t, 0)
		// SimCost of the CPU device still holds: the CPU engine is sim's.
		e := New(t, ra.DeviceOptions{Backend: CUDA, Log: opts.Log, SimCost: opts.SimCost})
		e.under = CUDA
		return e
	default:
		opts.Backend = Sim
		e := New(t, opts)
		e.under = Backend()
		return e
	}
}

// CPUID is the id the CPU device will have in the registry Devices makes
// from opts: after opts.SimDevices simulated GPUs on sim and cpu, after
// the driver's GPUs on cuda (skipping t like Devices without a driver).
// For options keyed by device id, such as SimCost, before the runtime is
// made.
func CPUID(t testing.TB, opts ra.DeviceOptions) int {
	t.Helper()
	if Backend() != CUDA {
		return opts.SimDevices
	}
	n, err := cudatest.Driver(t).DeviceCount()
	if err != nil {
		t.Fatalf("counting the GPUs: %v", err)
	}
	return n
}

// Device maps a case's device d onto the devices under test: d itself on
// sim, the CPU on cpu, d modulo the number of GPUs on cuda.
func (e *Env) Device(d int) int {
	switch e.under {
	case CPU:
		return e.RT.Registry().CPUDevice().ID
	case CUDA:
		if n := len(e.RT.Registry().GPUs()); n > 0 {
			return d % n
		}
	}
	return d
}

// DeviceSet is n distinct devices for a case that spreads one stage over
// several (a group, a collective): 0..n-1 on sim; on cpu the CPU and then
// simulated GPUs 0..n-2; on cuda the first n GPUs, skipping t with the
// reason when there are fewer.
func (e *Env) DeviceSet(t testing.TB, n int) []int {
	t.Helper()
	ids := make([]int, n)
	for i := range ids {
		ids[i] = i
	}
	switch e.under {
	case CPU:
		ids = append([]int{e.RT.Registry().CPUDevice().ID}, ids[:n-1]...)
	case CUDA:
		if g := len(e.RT.Registry().GPUs()); g < n {
			t.Skipf("the case needs %d GPUs, the CUDA backend has %d (RINGACTOR_EMU_DEVICES sets the emulated driver's)", n, g)
		}
	}
	return slices.Clip(ids)
}
