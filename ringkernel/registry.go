package ringkernel

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/ringactor/ringactor/internal/devlist"
)

// CPUName is the name of the CPU device, which device lists may use
// instead of its id (runtime.CPUName).
const CPUName = "cpu"

// CPU is the CPU's device id wherever a device id is taken
// (runtime.CPU): the CPU's real id is the number of GPUs, which differs
// from host to host, and CPU stands for it in code. A Registry's Device,
// CPU, Peer and Connection take it, and Resolve gives the real id. It is
// not p2pqueue.Host (-1), the host's end of a link.
const CPU = -2

// Registry is the set of devices found at start: the GPUs of one backend
// (ids 0..n-1), then the CPU (id n). The runtime makes it
// (runtime.DiscoverDevices, Runtime.Registry) from what the backends
// list; the zero Registry has no devices. It does not change once made.
type Registry struct {
	devices []Device
	backend string
	note    string
	// more says how to get more GPUs (the backend kind's More).
	more string
}

// NewRegistry lists gpus, the devices of a backend of kind k, and then
// cpu, renumbered after them by the caller. note is the line that says
// what was found (Note); k.More is what an error naming a device that is
// not there adds.
func NewRegistry(k Kind, gpus []Device, cpu Device, note string) *Registry {
	devs := append(append([]Device(nil), gpus...), cpu)
	return &Registry{devices: devs, backend: k.Name, note: note, more: k.More}
}

// Note is the line runtime.DiscoverDevices (or runtime.New) printed: what
// was found.
func (r *Registry) Note() string { return r.note }

// BackendName is the backend the registry's GPUs run on.
func (r *Registry) BackendName() string { return r.backend }

// Devices lists the devices by id.
func (r *Registry) Devices() []Device { return append([]Device(nil), r.devices...) }

// Resolve returns id with CPU replaced by the CPU's real id (CPU itself
// in a registry with no devices); any other id as it is.
func (r *Registry) Resolve(id int) int {
	if id == CPU && len(r.devices) > 0 {
		return len(r.devices) - 1
	}
	return id
}

// Device returns device id (CPU: the CPU), or an error listing the ids
// there are.
func (r *Registry) Device(id int) (Device, error) {
	id = r.Resolve(id)
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
	d = r.Resolve(d)
	return d >= 0 && d < len(r.devices) && r.devices[d].Kind == KindCPU
}

// CPUDevice is the CPU (ID -1 in a Registry not made by NewRegistry, as
// runtime.DiscoverDevices and runtime.New do, which has no devices).
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
	a, b = r.Resolve(a), r.Resolve(b)
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

// DeviceList reads a list of devices for n stages as command lines give
// it: "auto" (Chain(n)), one device for all of them ("2", "cpu"), or one
// per stage ("0,cpu,2"), each an id or "cpu". A name that is no device is
// reported (with the ids there are) before a list of the wrong length.
//
// Deprecated: reading a command line is the program's job, not the
// library's; DeviceList goes in the next release. Copy the few lines of
// parsing a program needs: split the list on commas, name each device
// with Registry.Lookup (an id or "cpu"), and take Registry.Chain(n) for
// "auto".
func (r *Registry) DeviceList(s string, n int) ([]int, error) {
	return devlist.Parse(s, n, r.id, r.Chain, ErrNoDevice)
}

// id is the id of the device Lookup finds by name.
func (r *Registry) id(name string) (int, error) {
	d, err := r.Lookup(name)
	return d.ID, err
}
