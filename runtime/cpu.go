package runtime

import (
	"fmt"

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

// CPUName is the name of the CPU device, which device lists (such as
// examples/pipeline's -devices) may use instead of its id.
const CPUName = "cpu"

// cpuDevice is the CPU as its engine lists it, renumbered as device id
// (after the GPUs).
func cpuDevice(engine rk.Backend, id int) Device {
	d := Device{Name: CPUName, Kind: KindCPU, Backend: KindCPU}
	if l, ok := engine.(rk.DeviceLister); ok {
		if devs, err := l.ListDevices(); err == nil && len(devs) == 1 {
			d = devs[0]
		}
	}
	d.ID, d.P2P = id, make([]bool, id+1)
	return d
}

func describeCPU(d Device) string {
	return fmt.Sprintf("the CPU (%d cores, %s) as device %d", d.Cores, gib(d.MemoryBytes), d.ID)
}

// gib says a size in GiB, for lines people read.
func gib(n uint64) string { return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30)) }
