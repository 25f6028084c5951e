package sim_test

import (
	"testing"

	"go.uber.org/goleak"

	rk "github.com/ringactor/ringactor/ringkernel"
	"github.com/ringactor/ringactor/ringkernel/ringkerneltest"
	"github.com/ringactor/ringactor/ringkernel/sim"
)

// Every case must stop the goroutines it starts, kernels included.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Options is the sim backend's entry in the conformance suite: four
// devices, and its skip table, the one place that says what the sim loop
// does not do and why.
var Options = ringkerneltest.Options{Name: "sim", Devices: 4, Lacks: map[ringkerneltest.Capability]string{}}

// The conformance suite on the sim backend, a fresh one per case: four
// devices in two peer pairs (0-1, 2-3) that reach each other staged, so
// the buffer case copies on both paths.
func TestConformance(t *testing.T) {
	ringkerneltest.Run(t, func(testing.TB) rk.Backend { return &sim.Backend{Devices: 4, Topology: "0-1,2-3:nv2,*:sys"} }, Options)
}

// CPUOptions is the CPU engine's entry (sim.NewCPU: the host's CPU as the
// one device beside the GPUs, the same loop): one device.
var CPUOptions = ringkerneltest.Options{Name: "cpu", Devices: 1, Lacks: map[ringkerneltest.Capability]string{}}

// The conformance suite on the CPU device's engine, a fresh one per case.
func TestConformanceCPU(t *testing.T) {
	ringkerneltest.Run(t, func(testing.TB) rk.Backend { return sim.NewCPU(0) }, CPUOptions)
}
