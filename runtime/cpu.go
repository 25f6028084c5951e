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

// CPUName is the name of the CPU device ("cpu", ringkernel.CPUName),
// which device lists (such as examples/pipeline's -devices) may use
// instead of its id.
const CPUName = rk.CPUName
