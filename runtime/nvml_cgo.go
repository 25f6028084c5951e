//go:build cgo

package runtime

import (
	"errors"
	"fmt"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// nvmlDevices lists the GPUs NVML sees (it loads libnvidia-ml with dlopen,
// so a machine without the driver gets an error, not a crash).
func nvmlDevices() ([]Device, error) {
	if ret := nvml.Init(); ret != nvml.SUCCESS {
		if ret == nvml.ERROR_LIBRARY_NOT_FOUND {
			return nil, errors.New("libnvidia-ml.so.1 not found: no NVIDIA driver on this machine")
		}
		return nil, errors.New(nvml.ErrorString(ret))
	}
	defer nvml.Shutdown()
	n, ret := nvml.DeviceGetCount()
	if ret != nvml.SUCCESS {
		return nil, errors.New(nvml.ErrorString(ret))
	}
	devs := make([]Device, 0, n)
	for i := range n {
		h, ret := nvml.DeviceGetHandleByIndex(i)
		if ret != nvml.SUCCESS {
			return nil, fmt.Errorf("device %d: %s", i, nvml.ErrorString(ret))
		}
		d := Device{ID: i, Backend: "cuda", Source: "nvml"}
		d.Name, _ = h.GetName()
		if mem, ret := h.GetMemoryInfo(); ret == nvml.SUCCESS {
			d.MemoryBytes, d.FreeBytes = mem.Total, mem.Free
		}
		if major, minor, ret := h.GetCudaComputeCapability(); ret == nvml.SUCCESS {
			d.ComputeCapability = fmt.Sprintf("%d.%d", major, minor)
		}
		devs = append(devs, d)
	}
	return devs, nil
}
