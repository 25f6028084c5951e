package runtime

import (
	rk "github.com/ringactor/ringactor/ringkernel"
)

// Device kinds.
const (
	// KindGPU is a GPU: a real one of the CUDA backend, or a simulated one.
	KindGPU = rk.KindGPU
	// KindCPU is the host's CPU run as a device by the goroutine engine of
	// the sim backend: the place for stages whose op has only a Go side.
	KindCPU = rk.KindCPU
)

// CPU is the CPU's device id in code (StageSpec.Device, a group's or a
// collective's Devices): its real id is the number of GPUs, which
// differs from host to host, and Build resolves CPU to it (Describe,
// StageStats and dead letters give the real id).
const CPU = rk.CPU

// CPUName is the name of the CPU device ("cpu", ringkernel.CPUName),
// which device lists (such as examples/pipeline's -devices) may use
// instead of its id.
const CPUName = rk.CPUName
