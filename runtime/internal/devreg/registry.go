package devreg

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	rk "github.com/ringactor/ringactor/ringkernel"
)

// Registry is the set of devices found at start: the GPUs of one backend
// (ids 0..n-1), then the CPU (id n). The zero Registry has no devices.
// It does not change once made.
type Registry struct {
	devices []rk.Device
	backend string
	note    string
	// more says how to get more GPUs (the backend kind's More).
	more string
}

// New lists gpus and then the CPU, and says so in note.
func New(backend string, gpus []rk.Device, cpu rk.Device, note string) *Registry {
	devs := append(append([]rk.Device(nil), gpus...), cpu)
	return &Registry{devices: devs, backend: backend, note: note + "; " + describeCPU(cpu)}
}

// Note is the line Open printed.
func (r *Registry) Note() string { return r.note }

// BackendName is the backend the registry's GPUs run on.
func (r *Registry) BackendName() string { return r.backend }

// Devices lists the devices by id.
func (r *Registry) Devices() []rk.Device { return append([]rk.Device(nil), r.devices...) }

// Device returns device id, or an error listing the ids there are.
func (r *Registry) Device(id int) (rk.Device, error) {
	if id < 0 || id >= len(r.devices) {
		return rk.Device{}, fmt.Errorf("%w %d: %s", rk.ErrNoDevice, id, r.idsText())
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
	return d >= 0 && d < len(r.devices) && r.devices[d].Kind == rk.KindCPU
}

// CPUDevice is the CPU (ID -1 in a registry with no devices).
func (r *Registry) CPUDevice() rk.Device {
	if len(r.devices) == 0 {
		return rk.Device{ID: -1, Name: CPUName, Kind: rk.KindCPU}
	}
	return r.devices[len(r.devices)-1]
}

// GPUs lists the GPUs by id.
func (r *Registry) GPUs() []rk.Device {
	if len(r.devices) == 0 {
		return nil
	}
	return append([]rk.Device(nil), r.devices[:len(r.devices)-1]...)
}

// Lookup finds a device by its id ("2") or by the CPU's name ("cpu").
func (r *Registry) Lookup(name string) (rk.Device, error) {
	name = strings.TrimSpace(name)
	if name == CPUName && len(r.devices) > 0 {
		return r.CPUDevice(), nil
	}
	id, err := strconv.Atoi(name)
	if err != nil {
		return rk.Device{}, fmt.Errorf("%w %q: name a device by its id or as %q; %s", rk.ErrNoDevice, name, CPUName, r.idsText())
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

// Requirements select devices (runtime.Requirements, field for field:
// the one converts to the other, and prints the same).
type Requirements struct {
	MinMemory uint64
	P2P       bool
	Count     int
}

// Select returns GPUs meeting req, most memory first, or an error saying
// which requirement ruled them out.
func (r *Registry) Select(req Requirements) ([]rk.Device, error) {
	var picked []rk.Device
	for _, d := range r.devices {
		if d.Kind == rk.KindCPU || d.MemoryBytes < req.MinMemory {
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
		return nil, fmt.Errorf("%w: %d of %d devices meet %+v", rk.ErrNoDevice, len(picked), len(r.devices), req)
	}
	sort.SliceStable(picked, func(i, j int) bool { return picked[i].MemoryBytes > picked[j].MemoryBytes })
	return picked, nil
}

// describeP2P says which pairs of devs are peers: "all pairs", "none", or
// the pairs ("0-1,2-3").
func describeP2P(devs []rk.Device) string {
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
