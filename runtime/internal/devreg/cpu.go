package devreg

import (
	"fmt"

	rk "github.com/ringactor/ringactor/ringkernel"
)

// cpuDevice is the CPU as its engine lists it, renumbered as device id
// (after the GPUs).
func cpuDevice(engine rk.Backend, id int) rk.Device {
	d := rk.Device{Name: rk.CPUName, Kind: rk.KindCPU, Backend: rk.KindCPU}
	if l, ok := engine.(rk.DeviceLister); ok {
		if devs, err := l.ListDevices(); err == nil && len(devs) == 1 {
			d = devs[0]
		}
	}
	d.ID, d.P2P = id, make([]bool, id+1)
	return d
}

// describeCPU is the CPU's part of the one line.
func describeCPU(d rk.Device) string {
	return fmt.Sprintf("the CPU (%d cores, %s) as device %d", d.Cores, GiB(d.MemoryBytes), d.ID)
}

// GiB says a size in GiB, for lines people read ("16.0 GiB").
func GiB(n uint64) string { return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30)) }
