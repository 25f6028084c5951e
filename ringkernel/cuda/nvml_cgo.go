//go:build cgo

package cuda

import (
	"errors"
	"fmt"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	rk "github.com/ringactor/ringactor/ringkernel"
)

// nvmlDevices lists the GPUs NVML sees (it loads libnvidia-ml with dlopen,
// so a machine without the driver gets an error, not a crash), each with
// its PCI address so that it can be matched with the CUDA driver's device
// of the same board (the two number devices differently).
func nvmlDevices() ([]nvmlGPU, error) {
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
	gpus := make([]nvmlGPU, 0, n)
	handles := make([]nvml.Device, n)
	for i := range n {
		h, ret := nvml.DeviceGetHandleByIndex(i)
		if ret != nvml.SUCCESS {
			return nil, fmt.Errorf("device %d: %s", i, nvml.ErrorString(ret))
		}
		g := nvmlGPU{Device: rk.Device{ID: i, Backend: "cuda", Source: "nvml"}}
		g.Name, _ = h.GetName()
		if mem, ret := h.GetMemoryInfo(); ret == nvml.SUCCESS {
			g.MemoryBytes, g.FreeBytes = mem.Total, mem.Free
		}
		if major, minor, ret := h.GetCudaComputeCapability(); ret == nvml.SUCCESS {
			g.ComputeCapability = fmt.Sprintf("%d.%d", major, minor)
		}
		if pci, ret := h.GetPciInfo(); ret == nvml.SUCCESS {
			g.pci, g.hasPCI = pciOfNVML(pci), true
		}
		for link := range nvml.NVLINK_MAX_LINKS {
			if st, ret := h.GetNvLinkState(link); ret != nvml.SUCCESS || st != nvml.FEATURE_ENABLED {
				continue // no such link, or down: not a way between GPUs
			}
			if pci, ret := h.GetNvLinkRemotePciInfo(link); ret == nvml.SUCCESS {
				g.nvlinks = append(g.nvlinks, pciOfNVML(pci))
			}
		}
		handles[i] = h
		gpus = append(gpus, g)
	}
	for i := range gpus {
		gpus[i].ancestor = make([]int, n)
		for j := range gpus[i].ancestor {
			gpus[i].ancestor[j] = -1
			if lvl, ret := handles[i].GetTopologyCommonAncestor(handles[j]); ret == nvml.SUCCESS && i != j {
				gpus[i].ancestor[j] = int(lvl)
			}
		}
	}
	return gpus, nil
}

func pciOfNVML(p nvml.PciInfo) pciAddr {
	return pciAddr{domain: int(p.Domain), bus: int(p.Bus), device: int(p.Device)}
}

// nvmlSample is what NVML says of a GPU now: its utilization (0 to 1) and
// memory, by PCI address.
type nvmlSample struct {
	util        float64
	used, total uint64
}

// nvmlSamples reads every GPU NVML sees.
func nvmlSamples() (map[pciAddr]nvmlSample, error) {
	if ret := nvml.Init(); ret != nvml.SUCCESS {
		return nil, errors.New(nvml.ErrorString(ret))
	}
	defer nvml.Shutdown()
	n, ret := nvml.DeviceGetCount()
	if ret != nvml.SUCCESS {
		return nil, errors.New(nvml.ErrorString(ret))
	}
	out := map[pciAddr]nvmlSample{}
	for i := range n {
		h, ret := nvml.DeviceGetHandleByIndex(i)
		if ret != nvml.SUCCESS {
			continue
		}
		pci, ret := h.GetPciInfo()
		if ret != nvml.SUCCESS {
			continue
		}
		s := nvmlSample{util: -1}
		if u, ret := h.GetUtilizationRates(); ret == nvml.SUCCESS {
			s.util = float64(u.Gpu) / 100
		}
		if m, ret := h.GetMemoryInfo(); ret == nvml.SUCCESS {
			s.used, s.total = m.Used, m.Total
		}
		out[pciOfNVML(pci)] = s
	}
	return out, nil
}
