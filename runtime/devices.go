package runtime

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	rk "github.com/ringactor/ringactor/ringkernel"
	"github.com/ringactor/ringactor/ringkernel/sim"
)

// Device is one device ringactor can place stages on, as its backend
// lists it (ringkernel.Device), numbered in the registry.
type Device = rk.Device

// Environment variables read by DiscoverDevices.
const (
	// SimDevicesEnv is the number of simulated devices (default 4).
	SimDevicesEnv = sim.DevicesEnv
	// SimP2PEnv is the simulated topology: "all" (default: every pair
	// peers over PCIe), "none", or pairs with their link kind in
	// nvidia-smi topo -m terms, such as "0-1:nv4,2-3:nv2,*:sys" (a bare
	// pair "0-1" is a PCIe peer pair; "*" is every pair not named, sys by
	// default). NVLink and PCIe below a host bridge (nv#, pix, pxb) have
	// peer access; phb, node and sys do not.
	SimP2PEnv = sim.P2PEnv
)

// DeviceOptions chooses how devices are found.
type DeviceOptions struct {
	// Backend names the ring-kernel backend, one of the registered kinds
	// (ringkernel.Kinds): "auto" (default: the first kind that opens, in
	// their Order: the GPUs the CUDA driver reports when the CUDA backend
	// can run them, else simulated devices), "sim" or "cuda". With
	// Config.Backend set it must be "auto" or that backend's name.
	Backend string
	// SimDevices and SimP2P override the environment variables.
	SimDevices int
	SimP2P     string
	// SimMemory is each simulated device's memory (default 16 GiB);
	// SimMemoryOf overrides it per device id.
	SimMemory   uint64
	SimMemoryOf map[int]uint64
	// SimCost is a simulated service time per message on a device id
	// (none by default): unequal devices, for balancing and stealing.
	SimCost map[int]time.Duration
	// Log receives one line saying which devices were found and why others
	// were not (default os.Stderr; io.Discard silences it).
	Log io.Writer
}

// ErrNoDevice: a device id that is not in the registry, or no device meets
// a requirement (ringkernel.ErrNoDevice).
var ErrNoDevice = rk.ErrNoDevice

// ErrBackend: the chosen backend cannot run here.
var ErrBackend = errors.New("ringactor: backend unavailable")

// Registry is the set of devices found at start: the GPUs of one backend
// (ids 0..n-1), then the CPU (id n).
type Registry struct {
	devices []Device
	backend string
	note    string
	// more says how to get more GPUs (the backend kind's More).
	more string
}

// newRegistry lists gpus and then the CPU, and says so in note.
func newRegistry(backend string, gpus []Device, cpu Device, note string) *Registry {
	devs := append(append([]Device(nil), gpus...), cpu)
	return &Registry{devices: devs, backend: backend, note: note + "; " + describeCPU(cpu)}
}

// DiscoverDevices lists the devices of the backend opts.Backend names, as
// New would choose it: for "auto", the GPUs the CUDA driver reports when
// the CUDA backend can run them, else simulated devices, saying once on
// opts.Log why there is no GPU ("cuda" is then an error wrapping the cause).
// It opens the backend only to ask it, and closes it again.
func DiscoverDevices(opts DeviceOptions) (*Registry, error) {
	sel, err := selectBackend(rk.Kinds(), opts, nil)
	if err != nil {
		return nil, err
	}
	closeBackend(sel.backend) // nothing ran on it
	return sel.reg, nil
}

// Note is the line DiscoverDevices printed.
func (r *Registry) Note() string { return r.note }

// BackendName is the backend the registry's GPUs run on.
func (r *Registry) BackendName() string { return r.backend }

// Devices lists the devices by id.
func (r *Registry) Devices() []Device { return append([]Device(nil), r.devices...) }

// Device returns device id, or an error listing the ids there are.
func (r *Registry) Device(id int) (Device, error) {
	if id < 0 || id >= len(r.devices) {
		return Device{}, fmt.Errorf("%w %d: %s", ErrNoDevice, id, r.idsText())
	}
	return r.devices[id], nil
}

// idsText says which ids there are.
func (r *Registry) idsText() string {
	if len(r.devices) == 0 {
		return "this registry has no devices; get one from DiscoverDevices or Runtime.Registry"
	}
	n := len(r.devices) - 1
	gpus := fmt.Sprintf("GPUs are 0..%d", n-1)
	switch {
	case n == 0:
		gpus = "there are no GPUs"
	case n == 1:
		gpus = "the GPU is 0"
	}
	more := ""
	if r.more != "" {
		more = " (" + r.more + ")"
	}
	return fmt.Sprintf("%s and the CPU is %d%s", gpus, n, more)
}

// CPU reports whether device d is the CPU.
func (r *Registry) CPU(d int) bool {
	return d >= 0 && d < len(r.devices) && r.devices[d].Kind == KindCPU
}

// CPUDevice is the CPU (ID -1 in a Registry not made by DiscoverDevices
// or New, which has no devices).
func (r *Registry) CPUDevice() Device {
	if len(r.devices) == 0 {
		return Device{ID: -1, Name: CPUName, Kind: KindCPU}
	}
	return r.devices[len(r.devices)-1]
}

// GPUs lists the GPUs by id.
func (r *Registry) GPUs() []Device {
	if len(r.devices) == 0 {
		return nil
	}
	return append([]Device(nil), r.devices[:len(r.devices)-1]...)
}

// Lookup finds a device by its id ("2") or by the CPU's name ("cpu"), as
// device lists on command lines give them.
func (r *Registry) Lookup(name string) (Device, error) {
	name = strings.TrimSpace(name)
	if name == CPUName && len(r.devices) > 0 {
		return r.CPUDevice(), nil
	}
	id, err := strconv.Atoi(name)
	if err != nil {
		return Device{}, fmt.Errorf("%w %q: name a device by its id or as %q; %s", ErrNoDevice, name, CPUName, r.idsText())
	}
	return r.Device(id)
}

// Peer reports whether device a can write device b's memory.
func (r *Registry) Peer(a, b int) bool {
	if a < 0 || a >= len(r.devices) || b < 0 || b >= len(r.devices[a].P2P) {
		return false
	}
	return r.devices[a].P2P[b]
}

// Requirements select devices.
type Requirements struct {
	// MinMemory is the least total memory a device needs.
	MinMemory uint64
	// P2P requires peer access to every other selected device.
	P2P bool
	// Count is how many devices are wanted (0: all that qualify).
	Count int
}

// Select returns GPUs meeting req, most memory first, or an error saying
// which requirement ruled them out.
func (r *Registry) Select(req Requirements) ([]Device, error) {
	var picked []Device
	for _, d := range r.devices {
		if d.Kind == KindCPU || d.MemoryBytes < req.MinMemory {
			continue
		}
		ok := true
		if req.P2P {
			for _, p := range picked {
				if !r.Peer(d.ID, p.ID) || !r.Peer(p.ID, d.ID) {
					ok = false
				}
			}
		}
		if ok {
			picked = append(picked, d)
		}
		if req.Count > 0 && len(picked) == req.Count {
			break
		}
	}
	if len(picked) == 0 || (req.Count > 0 && len(picked) < req.Count) {
		return nil, fmt.Errorf("%w: %d of %d devices meet %+v", ErrNoDevice, len(picked), len(r.devices), req)
	}
	sort.SliceStable(picked, func(i, j int) bool { return picked[i].MemoryBytes > picked[j].MemoryBytes })
	return picked, nil
}

func describeP2P(devs []Device) string {
	all, none := true, true
	var pairs []string
	for i, d := range devs {
		for j, p := range d.P2P {
			if i == j {
				continue
			}
			all = all && p
			none = none && !p
			if p && i < j {
				pairs = append(pairs, fmt.Sprintf("%d-%d", i, j))
			}
		}
	}
	switch {
	case all:
		return "all pairs"
	case none:
		return "none"
	}
	return strings.Join(pairs, ",")
}
