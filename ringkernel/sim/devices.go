package sim

import (
	"fmt"
	"os"
	goruntime "runtime"
	"strconv"
	"strings"
	"time"

	"github.com/ringactor/ringactor/kernels"
	rk "github.com/ringactor/ringactor/ringkernel"
)

// Environment variables the simulator reads where its options do not say.
const (
	// DevicesEnv is the number of simulated devices (default 4).
	DevicesEnv = "RINGACTOR_SIM_DEVICES"
	// P2PEnv is the simulated topology: "all" (default: every pair peers
	// over PCIe), "none", or pairs with their link kind in nvidia-smi
	// topo -m terms, such as "0-1:nv4,2-3:nv2,*:sys" (a bare pair "0-1"
	// is a PCIe peer pair; "*" is every pair not named, sys by default).
	// NVLink and PCIe below a host bridge (nv#, pix, pxb) have peer
	// access; phb, node and sys do not.
	P2PEnv = "RINGACTOR_SIM_P2P"
)

// The sim kind: "auto" falls back to it last, since it runs anywhere.
func init() {
	rk.Register(rk.Kind{Name: "sim", Order: 1000, Open: open, List: list,
		Describe: func(_ rk.Backend, devs []rk.Device) string {
			return fmt.Sprintf("using %d simulated devices", len(devs))
		},
		More: fmt.Sprintf("set %s for more simulated GPUs", DevicesEnv)})
}

// open makes a sim backend with the devices o describes.
func open(o rk.OpenOptions) (rk.Backend, error) {
	devs, err := listDevices(o)
	if err != nil {
		return nil, err
	}
	return &Backend{Devices: len(devs), Cost: o.Cost, Topology: o.Topology, Memory: o.Memory, MemoryOf: o.MemoryOf}, nil
}

// options are b's own device options.
type optioner interface{ options() rk.OpenOptions }

func (b *Backend) options() rk.OpenOptions {
	return rk.OpenOptions{Devices: b.Devices, Topology: b.Topology, Memory: b.Memory, MemoryOf: b.MemoryOf}
}

// list lists the devices of a sim backend a program made (or one that
// embeds it): o's options where set, else the backend's.
func list(b rk.Backend, o rk.OpenOptions) ([]rk.Device, error) {
	if ob, ok := b.(optioner); ok {
		own := ob.options()
		if o.Devices == 0 {
			o.Devices = own.Devices
		}
		if o.Topology == "" {
			o.Topology = own.Topology
		}
		if o.Memory == 0 {
			o.Memory = own.Memory
		}
		if o.MemoryOf == nil {
			o.MemoryOf = own.MemoryOf
		}
	}
	return listDevices(o)
}

// ListDevices lists the backend's devices: the host's CPU for a CPU
// engine (NewCPU), else Devices simulated GPUs (RINGACTOR_SIM_DEVICES, or
// 4, where Devices is 0) joined as Topology says (RINGACTOR_SIM_P2P where
// it is empty), each with Memory (16 GiB by default).
func (b *Backend) ListDevices() ([]rk.Device, error) {
	if b.Kind == rk.KindCPU {
		return []rk.Device{hostCPU()}, nil
	}
	return listDevices(b.options())
}

// NewCPU is the engine of the CPU device: the simulator's goroutine loop
// on the host's CPU, one device (0) whose loops take cost per message
// (none for 0). It runs ops with a Go side.
func NewCPU(cost time.Duration) *Backend {
	b := &Backend{Devices: 1, Kind: rk.KindCPU}
	if cost > 0 {
		b.Cost = map[int]time.Duration{0: cost}
	}
	return b
}

// hostCPU is the host's CPU as device 0: its cores and the host's memory.
func hostCPU() rk.Device {
	total, free := hostMemory()
	return rk.Device{ID: 0, Name: rk.KindCPU, Kind: rk.KindCPU, Backend: rk.KindCPU, Source: "host",
		MemoryBytes: total, FreeBytes: free, ComputeCapability: "cpu", Cores: goruntime.NumCPU(),
		P2P: make([]bool, 1), MeasuresBusy: true, Managed: true}
}

// Supports reports whether device can run op: the CPU runs any op with a
// Go side; a simulated GPU, standing for a real one, runs only ops with a
// CUDA source (it runs their Go side, so they need both).
func (b *Backend) Supports(device int, op kernels.Op) error {
	if err := b.checkDevice(device); err != nil {
		return err
	}
	e := &rk.UnsupportedError{Op: op.Name, Device: device, Name: fmt.Sprintf("sim-%d", device), Kind: rk.KindGPU}
	switch {
	case b.Kind == rk.KindCPU && !rk.HasGo(op):
		e.Name, e.Kind, e.Why, e.Fix = rk.KindCPU, rk.KindCPU, "has no Go side (only a CUDA source)", "place it on a GPU of the CUDA backend"
	case b.Kind == rk.KindCPU:
		return nil
	case op.CUDA == "":
		e.Why, e.Fix = "has only a Go side (no CUDA source)", "place it on the CPU"
	case !rk.HasGo(op):
		e.Why, e.Fix = "has no Go side (only a CUDA source), which the simulator runs", "run it on the CUDA backend"
	default:
		return nil
	}
	return e
}

// Sample reads the host's memory for a CPU engine; a simulated GPU has
// nothing to read (the runtime counts what it holds there).
func (b *Backend) Sample() []rk.DeviceSample {
	if b.Kind != rk.KindCPU {
		return nil
	}
	total, free := hostMemory()
	if total == 0 {
		return nil
	}
	return []rk.DeviceSample{{UsedBytes: total - min(free, total), TotalBytes: total}}
}

// listDevices makes the simulated GPUs o describes.
func listDevices(o rk.OpenOptions) ([]rk.Device, error) {
	n := o.Devices
	if n == 0 {
		n = 4
		if s := os.Getenv(DevicesEnv); s != "" {
			v, err := strconv.Atoi(s)
			if err != nil || v < 1 || v > 64 {
				return nil, fmt.Errorf("%w: %s=%q; want a count from 1 to 64", rk.ErrNoDevice, DevicesEnv, s)
			}
			n = v
		}
	}
	if n < 1 || n > 64 {
		return nil, fmt.Errorf("%w: %d simulated devices; want 1 to 64", rk.ErrNoDevice, n)
	}
	topo := o.Topology
	if topo == "" {
		topo = os.Getenv(P2PEnv)
	}
	conn, p2p, err := ParseTopology(topo, n)
	if err != nil {
		return nil, err
	}
	mem := o.Memory
	if mem == 0 {
		mem = 16 << 30
	}
	devs := make([]rk.Device, n)
	for i := range devs {
		m := mem
		if v, ok := o.MemoryOf[i]; ok {
			m = v
		}
		devs[i] = rk.Device{ID: i, Name: fmt.Sprintf("sim-%d", i), Kind: rk.KindGPU, Backend: "sim", Source: "sim",
			MemoryBytes: m, FreeBytes: m, ComputeCapability: "sim", P2P: p2p[i], Topology: conn[i], MeasuresBusy: true, Managed: true}
	}
	return devs, nil
}

// ParseTopology reads a simulated topology for n devices:
//
//	"all" (or empty)  every pair peers over PCIe (PIX)
//	"none"            no pair peers (SYS)
//	"0-1:nv4,2-3,*:sys"  pairs with a link kind (nv<links>, pix, pxb, phb,
//	                  node, sys; a bare pair is pix); "*:kind" for every
//	                  pair not named (default sys)
//
// It returns each pair's connection and whether it has peer access
// (Connection.Peerable). Its errors wrap ringkernel.ErrNoDevice.
func ParseTopology(s string, n int) ([][]rk.Connection, [][]bool, error) {
	conn := make([][]rk.Connection, n)
	p2p := make([][]bool, n)
	set := make([][]bool, n)
	for i := range conn {
		conn[i], p2p[i], set[i] = make([]rk.Connection, n), make([]bool, n), make([]bool, n)
	}
	rest := rk.Connection{Level: rk.LevelSYS}
	switch strings.TrimSpace(s) {
	case "", "all":
		rest = rk.Connection{Level: rk.LevelPIX}
		s = ""
	case "none":
		s = ""
	}
	bad := func(item, why string) error {
		return fmt.Errorf("%w: simulated topology %q: %q %s (write e.g. 0-1:nv4,2-3,*:sys, all or none)", rk.ErrNoDevice, s, item, why)
	}
	for item := range strings.SplitSeq(s, ",") {
		if s == "" {
			break
		}
		item = strings.TrimSpace(item)
		pair, kind, hasKind := strings.Cut(item, ":")
		c := rk.Connection{Level: rk.LevelPIX}
		if hasKind {
			var err error
			if c, err = rk.ParseConnection(kind); err != nil || c.Level == rk.LevelSelf || c.Level == rk.LevelUnknown {
				return nil, nil, bad(item, "names no link kind")
			}
		}
		if pair == "*" {
			if !hasKind {
				return nil, nil, bad(item, "needs a kind, as in *:sys")
			}
			rest = c
			continue
		}
		a, b, ok := strings.Cut(pair, "-")
		i, err1 := strconv.Atoi(a)
		j, err2 := strconv.Atoi(b)
		if !ok || err1 != nil || err2 != nil || i < 0 || j < 0 || i >= n || j >= n || i == j {
			return nil, nil, bad(item, fmt.Sprintf("is not a pair of distinct device ids below %d", n))
		}
		conn[i][j], conn[j][i] = c, c
		set[i][j], set[j][i] = true, true
	}
	for i := range conn {
		for j := range conn[i] {
			switch {
			case i == j:
				conn[i][j] = rk.Connection{Level: rk.LevelSelf}
			case !set[i][j]:
				conn[i][j] = rest
			}
			p2p[i][j] = i != j && conn[i][j].Peerable()
		}
	}
	return conn, p2p, nil
}
