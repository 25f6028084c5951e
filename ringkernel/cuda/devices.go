package cuda

import (
	"fmt"
	"strings"

	drv "github.com/ringactor/ringactor/cuda"
	"github.com/ringactor/ringactor/kernels"
	rk "github.com/ringactor/ringactor/ringkernel"
)

// The cuda kind: "auto" tries it first, and takes the GPUs where the
// driver loads and reports one.
func init() {
	rk.Register(rk.Kind{Name: "cuda", Order: 100, Open: open, Describe: describe,
		Missing: "no GPU to run on",
		Fix:     `choose backend "sim" (or "auto") to run on simulated devices instead`})
}

// open readies the CUDA backend. Where it cannot, the error wraps the
// cause (cuda.ErrNoDriver where there is no driver) and says so when NVML
// sees GPUs anyway (a driver library that does not load, or a build
// without cgo).
func open(rk.OpenOptions) (rk.Backend, error) {
	b, err := New(Options{})
	if err != nil {
		if gpus, nerr := nvmlDevices(); nerr == nil && len(gpus) > 0 {
			names := make([]string, len(gpus))
			for i, g := range gpus {
				names[i] = g.Name
			}
			err = fmt.Errorf("%w; NVML sees %d GPU(s) (%s)", err, len(gpus), strings.Join(names, ", "))
		}
		return nil, err
	}
	if _, err := b.ListDevices(); err != nil {
		b.Close()
		return nil, err
	}
	return b, nil
}

// describe names the driver and the GPUs.
func describe(b rk.Backend, devs []rk.Device) string {
	names := make([]string, len(devs))
	for i, d := range devs {
		names[i] = d.Name
	}
	via := "the CUDA driver"
	if db, ok := b.(interface{ Driver() *drv.Driver }); ok {
		v := db.Driver().Version()
		via = fmt.Sprintf("%s (CUDA %d.%d)", db.Driver().Path(), v/1000, v%1000/10)
	}
	return fmt.Sprintf("using %d CUDA GPU(s) through %s: %s", len(devs), via, strings.Join(names, ", "))
}

// Supports reports whether GPU device can run op: one with a CUDA source.
func (b *Backend) Supports(device int, op kernels.Op) error {
	devs, err := b.listed()
	if err != nil {
		return err
	}
	if device < 0 || device >= len(devs) {
		return fmt.Errorf("%w %d: the driver reports devices 0..%d", rk.ErrNoDevice, device, len(devs)-1)
	}
	if op.CUDA != "" {
		return nil
	}
	return &rk.UnsupportedError{Op: op.Name, Device: device, Name: devs[device].Name, Kind: rk.KindGPU,
		Why: "has only a Go side (no CUDA source)", Fix: "place it on the CPU"}
}

// Sample reads NVML's utilization and memory of each GPU NVML sees (by
// PCI address: NVML and the driver number GPUs differently); nil without
// NVML.
func (b *Backend) Sample() []rk.DeviceSample {
	devs, err := b.listed()
	if err != nil {
		return nil
	}
	samples, err := nvmlSamples()
	if err != nil {
		return nil
	}
	out := make([]rk.DeviceSample, len(devs))
	for i, d := range devs {
		if d.pci == nil {
			continue
		}
		if s, ok := samples[*d.pci]; ok {
			out[i] = rk.DeviceSample{UsedBytes: s.used, TotalBytes: s.total}
			if s.util >= 0 {
				out[i].Utilization, out[i].UtilizationFrom = s.util, "nvml"
			}
		}
	}
	return out
}

// attrPCIDomainID is CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, which package cuda
// does not name.
const attrPCIDomainID drv.Attribute = 50

// pciAddr is where a board sits on the PCI bus: the one number NVML and the
// CUDA driver agree on (their device orders differ, and
// CUDA_VISIBLE_DEVICES hides devices from the driver only).
type pciAddr struct{ domain, bus, device int }

// nvmlGPU is a GPU as NVML reports it.
type nvmlGPU struct {
	rk.Device
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
func connect(a, b nvmlGPU, gpu map[pciAddr]bool) rk.Connection {
	if a.pci == b.pci && a.hasPCI {
		return rk.Connection{Level: rk.LevelSelf}
	}
	direct := 0
	for _, p := range a.nvlinks {
		if b.hasPCI && p == b.pci {
			direct++
		}
	}
	if direct > 0 {
		return rk.Connection{Level: rk.LevelNVLink, NVLinks: direct}
	}
	if n := min(switchLinks(a, gpu), switchLinks(b, gpu)); n > 0 {
		return rk.Connection{Level: rk.LevelNVLink, NVLinks: n}
	}
	if b.ID < 0 || b.ID >= len(a.ancestor) {
		return rk.Connection{Level: rk.LevelUnknown}
	}
	switch lvl := a.ancestor[b.ID]; {
	case lvl < 0:
		return rk.Connection{Level: rk.LevelUnknown}
	case lvl <= 10: // same board, or one switch
		return rk.Connection{Level: rk.LevelPIX}
	case lvl <= 20:
		return rk.Connection{Level: rk.LevelPXB}
	case lvl <= 30:
		return rk.Connection{Level: rk.LevelPHB}
	case lvl <= 40:
		return rk.Connection{Level: rk.LevelNODE}
	}
	return rk.Connection{Level: rk.LevelSYS}
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

// gpu is a listed device and where NVML finds it.
type gpu struct {
	rk.Device
	pci *pciAddr // nil where NVML does not see it
}

// ListDevices lists the GPUs the CUDA driver runs, numbered as the driver
// numbers them (the ids ring kernels are launched on): name, total memory,
// SM count, compute capability and which pairs have peer access. NVML,
// where present, adds what the driver tells only inside a context (free
// memory), a name the driver did not give, and how each pair connects.
// The backend lists them once and keeps the list.
func (b *Backend) ListDevices() ([]rk.Device, error) {
	gpus, err := b.listed()
	if err != nil {
		return nil, err
	}
	out := make([]rk.Device, len(gpus))
	for i, g := range gpus {
		out[i] = g.Device
		out[i].P2P = append([]bool(nil), g.P2P...)
		out[i].Topology = append([]rk.Connection(nil), g.Topology...)
	}
	return out, nil
}

// listed lists the GPUs at the first call and keeps them.
func (b *Backend) listed() ([]gpu, error) {
	b.listOnce.Do(func() { b.gpus, b.listErr = listGPUs(b.drv) })
	return b.gpus, b.listErr
}

func listGPUs(d *drv.Driver) ([]gpu, error) {
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
	devs := make([]gpu, n)
	for i, h := range handles {
		dev := gpu{Device: rk.Device{ID: i, Kind: rk.KindGPU, Backend: "cuda", Source: "driver", P2P: make([]bool, n), MeasuresBusy: true}}
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
		// Managed buffers need the memory (attribute 83) and the host's
		// access to it while kernels run (89): ring kernels never stop, and
		// without concurrent access a host touch faults (pre-Pascal, Windows).
		mm, err1 := h.Attribute(drv.AttrManagedMemory)
		cm, err2 := h.Attribute(drv.AttrConcurrentManagedAccess)
		dev.Managed = err1 == nil && err2 == nil && mm != 0 && cm != 0
		for j, peer := range handles {
			if j == i {
				continue
			}
			if dev.P2P[j], err = h.CanAccessPeer(peer); err != nil {
				return nil, fmt.Errorf("device %d: peer %d: %w", i, j, err)
			}
		}
		dev.FreeBytes = dev.MemoryBytes // unless NVML knows better
		dev.Topology = make([]rk.Connection, n)
		for j := range dev.Topology {
			dev.Topology[j] = rk.Connection{Level: rk.LevelUnknown}
		}
		dev.Topology[i] = rk.Connection{Level: rk.LevelSelf}
		addr, ok := pciOf(h)
		if ok {
			dev.PCIBusID = fmt.Sprintf("%04x:%02x:%02x.0", addr.domain, addr.bus, addr.device)
		}
		if ok && byPCI[addr].hasPCI {
			g := byPCI[addr]
			dev.pci = &addr
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
