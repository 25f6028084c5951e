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
	// ancestor[j] is NVML's common-ancestor level with NVML's GPU j
	// (nvmlGpuTopologyLevel_t: 0 same board, 10 one switch, 20 several,
	// 30 host bridge, 40 NUMA node, 50 system); -1 where NVML did not say.
	ancestor []int
	// nvlinks is the PCI address at the far end of each active NVLink.
	nvlinks []pciAddr
}

// connect says how a reaches b from what NVML told: the NVLinks from a
// that end at b; else, where both have NVLinks to something that is not a
// GPU (an NVSwitch), as many as the fewer of the two has; else the PCIe
// level of their common ancestor. gpu says which PCI addresses are GPUs.
func connect(a, b nvmlGPU, gpu map[pciAddr]bool) Connection {
	if a.pci == b.pci && a.hasPCI {
		return Connection{Level: LevelSelf}
	}
	direct := 0
	for _, p := range a.nvlinks {
		if b.hasPCI && p == b.pci {
			direct++
		}
	}
	if direct > 0 {
		return Connection{Level: LevelNVLink, NVLinks: direct}
	}
	if n := min(switchLinks(a, gpu), switchLinks(b, gpu)); n > 0 {
		return Connection{Level: LevelNVLink, NVLinks: n}
	}
	if b.ID < 0 || b.ID >= len(a.ancestor) {
		return Connection{Level: LevelUnknown}
	}
	switch lvl := a.ancestor[b.ID]; {
	case lvl < 0:
		return Connection{Level: LevelUnknown}
	case lvl <= 10: // same board, or one switch
		return Connection{Level: LevelPIX}
	case lvl <= 20:
		return Connection{Level: LevelPXB}
	case lvl <= 30:
		return Connection{Level: LevelPHB}
	case lvl <= 40:
		return Connection{Level: LevelNODE}
	}
	return Connection{Level: LevelSYS}
}

// switchLinks counts g's NVLinks that end at something not a GPU.
func switchLinks(g nvmlGPU, gpu map[pciAddr]bool) int {
	n := 0
	for _, p := range g.nvlinks {
		if !gpu[p] {
			n++
		}
	}
	return n
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
	isGPU := map[pciAddr]bool{}
	if gpus, err := nvmlDevices(); err == nil {
		byPCI = map[pciAddr]nvmlGPU{}
		for _, g := range gpus {
			if g.hasPCI {
				byPCI[g.pci] = g
				isGPU[g.pci] = true
			}
		}
	}
	devs := make([]Device, n)
	for i, h := range handles {
		dev := Device{ID: i, Kind: KindGPU, Backend: "cuda", Source: "driver", P2P: make([]bool, n)}
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
		dev.Topology = make([]Connection, n)
		for j := range dev.Topology {
			dev.Topology[j] = Connection{Level: LevelUnknown}
		}
		dev.Topology[i] = Connection{Level: LevelSelf}
		if addr, ok := pciOf(h); ok && byPCI[addr].hasPCI {
			g := byPCI[addr]
			dev.nvml = &addr
			for j, peer := range handles {
				if pa, ok := pciOf(peer); ok && j != i && byPCI[pa].hasPCI {
					dev.Topology[j] = connect(g, byPCI[pa], isGPU)
				}
			}
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
