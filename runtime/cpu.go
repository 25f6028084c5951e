package runtime

import (
	"fmt"
	goruntime "runtime"
	"time"

	"github.com/ringactor/ringactor/ringkernel/sim"
)

// Device kinds.
const (
	// KindGPU is a GPU: a real one of the CUDA backend, or a simulated one.
	KindGPU = "gpu"
	// KindCPU is the host's CPU run as a device by the goroutine engine of
	// the sim backend: the place for stages whose op has only a Go side.
	KindCPU = "cpu"
)

// CPUName is the name of the CPU device, which device lists (such as
// examples/pipeline's -devices) may use instead of its id.
const CPUName = "cpu"

// cpuDevice is the host CPU as device id: its cores and the host's memory.
func cpuDevice(id int) Device {
	total, free := hostMemory()
	return Device{ID: id, Name: CPUName, Kind: KindCPU, Backend: KindCPU, Source: "host",
		MemoryBytes: total, FreeBytes: free, ComputeCapability: "cpu", Cores: goruntime.NumCPU(),
		P2P: make([]bool, id+1)}
}

// openCPU is the engine of the CPU device: the sim backend's goroutines,
// with its one device at index 0 and the cost given for the CPU's id.
func openCPU(id int, opts DeviceOptions) *sim.Backend {
	b := &sim.Backend{Devices: 1, Kind: KindCPU}
	if c, ok := opts.SimCost[id]; ok {
		b.Cost = map[int]time.Duration{0: c}
	}
	return b
}

func describeCPU(d Device) string {
	return fmt.Sprintf("the CPU (%d cores, %s) as device %d", d.Cores, gib(d.MemoryBytes), d.ID)
}

// gib says a size in GiB, for lines people read.
func gib(n uint64) string { return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30)) }
