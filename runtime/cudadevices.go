package runtime

import (
	"fmt"

	drv "github.com/ringactor/ringactor/cuda"
)

// attrPCIDomainID is CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, which package cuda
// does not name.
const attrPCIDomainID drv.Attribute = 50

// pciAddr is where a board sits on the PCI bus: the one number NVML and the
// CUDA driver agree on (their device orders differ, and
// CUDA_VISIBLE_DEVICES hides devices from the driver only).
type pciAddr struct{ domain, bus, device int }

// nvmlGPU is a GPU as NVML reports it.
type nvmlGPU struct {
	Device
	pci    pciAddr
	hasPCI bool
}

// cudaDevices lists the GPUs the CUDA driver runs, numbered as the driver
// numbers them (the ids ring kernels are launched on): name, total memory,
// SM count, compute capability and which pairs have peer access. NVML,
// where present, adds what the driver tells only inside a context (free
// memory) and a name the driver did not give.
func cudaDevices(d *drv.Driver) ([]Device, error) {
	n, err := d.DeviceCount()
	if err != nil {
		return nil, err
	}
	handles := make([]*drv.Device, n)
	for i := range handles {
		if handles[i], err = d.Device(i); err != nil {
			return nil, err
		}
	}
	var byPCI map[pciAddr]nvmlGPU
	if gpus, err := nvmlDevices(); err == nil {
		byPCI = map[pciAddr]nvmlGPU{}
		for _, g := range gpus {
			if g.hasPCI {
				byPCI[g.pci] = g
			}
		}
	}
	devs := make([]Device, n)
	for i, h := range handles {
		dev := Device{ID: i, Backend: "cuda", Source: "driver", P2P: make([]bool, n)}
		dev.Name, _ = h.Name() // a nameless device still runs kernels
		if dev.MemoryBytes, err = h.TotalMemory(); err != nil {
			return nil, fmt.Errorf("device %d: %w", i, err)
		}
		major, minor, err := h.ComputeCapability()
		if err != nil {
			return nil, fmt.Errorf("device %d: %w", i, err)
		}
		dev.ComputeCapability = fmt.Sprintf("%d.%d", major, minor)
		if dev.SMs, err = h.Attribute(drv.AttrMultiprocessorCount); err != nil {
			return nil, fmt.Errorf("device %d: %w", i, err)
		}
		for j, peer := range handles {
			if j == i {
				continue
			}
			if dev.P2P[j], err = h.CanAccessPeer(peer); err != nil {
				return nil, fmt.Errorf("device %d: peer %d: %w", i, j, err)
			}
		}
		dev.FreeBytes = dev.MemoryBytes // unless NVML knows better
		if addr, ok := pciOf(h); ok && byPCI[addr].hasPCI {
			g := byPCI[addr]
			dev.FreeBytes = g.FreeBytes
			if dev.Name == "" {
				dev.Name = g.Name
			}
		}
		devs[i] = dev
	}
	return devs, nil
}

// pciOf is h's PCI address, if the driver says.
func pciOf(h *drv.Device) (pciAddr, bool) {
	dom, err1 := h.Attribute(attrPCIDomainID)
	bus, err2 := h.Attribute(drv.AttrPCIBusID)
	dev, err3 := h.Attribute(drv.AttrPCIDeviceID)
	if err1 != nil || err2 != nil || err3 != nil {
		return pciAddr{}, false
	}
	return pciAddr{domain: dom, bus: bus, device: dev}, true
}
