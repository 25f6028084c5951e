package ringkernel

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/ringactor/ringactor/kernels"
)

// Device kinds.
const (
	// KindGPU is a GPU: a real one of the CUDA backend, or a simulated one.
	KindGPU = "gpu"
	// KindCPU is the host's CPU run as a device by a goroutine engine (the
	// sim backend's, sim.NewCPU): the place for ops with only a Go side.
	KindCPU = "cpu"
)

// ErrNoDevice: a device id that is not there, or no device meets a
// requirement. runtime.ErrNoDevice is this error.
var ErrNoDevice = errors.New("ringactor: no such device")

// ErrUnsupported: a device cannot run an op. Supporter's errors wrap it
// (as *UnsupportedError, which says why and what to do instead).
var ErrUnsupported = errors.New("ringkernel: op not supported on device")

// Device is one device as its backend lists it (ggml-backend's
// get_device and get_props): what it is, its memory and its links to the
// backend's other devices.
type Device struct {
	// ID is the device's id: the backend's own in a backend's list, the
	// runtime's in its registry (GPUs keep theirs; the CPU comes last).
	ID   int    `json:"id"`
	Name string `json:"name"`
	// Kind is KindGPU or KindCPU.
	Kind string `json:"kind"`
	// Backend is the kind of backend that runs it: "sim" or "cuda" for a
	// GPU, "cpu" for the CPU.
	Backend string `json:"backend"`
	// Source is where the device was found: "driver" (the CUDA driver,
	// with NVML's free memory where NVML is present), "sim" or "host".
	Source string `json:"source"`
	// MemoryBytes is its total memory, FreeBytes what is free (where known).
	MemoryBytes uint64 `json:"memory_bytes"`
	FreeBytes   uint64 `json:"free_bytes"`
	// ComputeCapability is "9.0" and the like; "sim" for simulated devices,
	// "cpu" for the CPU.
	ComputeCapability string `json:"compute_capability"`
	// SMs is a GPU's multiprocessor count where known, else 0; Cores is
	// the CPU's core count.
	SMs   int `json:"sms"`
	Cores int `json:"cores"`
	// PCIBusID is a GPU's PCI address in sysfs's form, "0000:17:00.0",
	// where the backend knows it (the CUDA driver's); "" otherwise.
	PCIBusID string `json:"pci_bus_id,omitempty"`
	// P2P[j] reports whether this device can write device j's memory.
	P2P []bool `json:"p2p"`
	// Topology[j] is how this GPU reaches GPU j (the CPU's, and the way to
	// it, are Registry.Connection's).
	Topology []Connection `json:"topology,omitempty"`
	// MeasuresBusy: its loops count the time they spend on messages
	// (Status.Busy), so a device's utilization is derived from its
	// kernels' (sim, the CPU and the CUDA device loop all count it).
	MeasuresBusy bool `json:"-"`
	// Managed: it has managed (unified) memory for buffers (devmem.Managed).
	Managed bool `json:"managed"`
}

// DeviceLister is a Backend that lists its devices, by the ids Alloc and
// Start take (ggml-backend's get_device_count and get_device). The
// runtime builds its registry from it and never asks which backend it
// runs on.
type DeviceLister interface {
	ListDevices() ([]Device, error)
}

// Supporter is a Backend that says whether one of its devices can run an
// op (ggml-backend's supports_op): nil if it can, else an error wrapping
// ErrUnsupported, an *UnsupportedError saying why and what to do. Build
// asks it for every stage before it makes a link. A backend that is no
// Supporter runs every op it is given, or fails at Start.
type Supporter interface {
	Supports(device int, op kernels.Op) error
}

// UnsupportedError is a Supporter's answer that a device cannot run an op.
// Its text reads "op <Op> <Why>, so it cannot run on <Kind> <Device>
// (<Name>); <Fix>".
type UnsupportedError struct {
	Op string
	// Device is the device's id (the backend's; the runtime's once the
	// runtime passes the error on), Name and Kind its name and kind.
	Device     int
	Name, Kind string
	// Why is what the op lacks ("has only a Go side (no CUDA source)");
	// Fix where to run it instead ("place it on the CPU").
	Why, Fix string
}

func (e *UnsupportedError) Error() string {
	return fmt.Sprintf("op %s %s, so it cannot run on %s %d (%s); %s", e.Op, e.Why, e.Kind, e.Device, e.Name, e.Fix)
}

// Is makes errors.Is(err, ErrUnsupported) true.
func (e *UnsupportedError) Is(target error) bool { return target == ErrUnsupported }

// HasGo reports whether op has a Go side, which goroutine engines (CPU, sim) run.
func HasGo(op kernels.Op) bool {
	return op.Go != nil || op.GoPort != nil || op.Typed != nil || op.GoBuf != nil
}

// DeviceSample is what a device's backend reads of it now, for metrics.
// Its zero value knows nothing.
type DeviceSample struct {
	// Utilization is the fraction of the time the device was busy (0 to
	// 1), as UtilizationFrom ("nvml") measures it; "" where the backend
	// does not know it, and the runtime derives it from its kernels' busy
	// time where the device MeasuresBusy.
	Utilization     float64
	UtilizationFrom string
	// UsedBytes of TotalBytes are in use there, by anyone; TotalBytes 0
	// where the backend does not know.
	UsedBytes, TotalBytes uint64
}

// Sampler is a Backend that reads its devices' use now (NVML on a GPU,
// the host's memory for the CPU). Sample returns one reading per device
// id (shorter, or nil, where it knows nothing of the rest); the runtime
// calls it once per metrics snapshot.
type Sampler interface {
	Sample() []DeviceSample
}

// OpenOptions are what a program asks of a backend's devices
// (runtime.DeviceOptions passes them on). A backend reads what concerns
// it: the simulator, which makes its devices up, all of them; the CUDA
// backend, which finds its devices, none.
type OpenOptions struct {
	// Devices is how many devices to make (0: the backend's default).
	Devices int
	// Topology is how they connect ("all", "none", or pairs with link
	// kinds such as "0-1:nv4,2-3:nv2,*:sys").
	Topology string
	// Memory is each device's memory (0: the backend's default);
	// MemoryOf overrides it per device id.
	Memory   uint64
	MemoryOf map[int]uint64
	// Cost is a service time per message on a device id.
	Cost map[int]time.Duration
}

// Kind is a kind of backend a program can pick by name
// (runtime.DeviceOptions.Backend), registered by its package's init, as
// database/sql drivers are. The runtime picks among the kinds as data
// and never branches on a name.
type Kind struct {
	// Name is what DeviceOptions.Backend calls it, and what its
	// backends' Name returns.
	Name string
	// Order: "auto" tries kinds in increasing Order and takes the first
	// that opens. The last must open anywhere (the simulator).
	Order int
	// Open readies a backend of this kind, or says why it cannot run
	// here.
	Open func(OpenOptions) (Backend, error)
	// List lists the devices of b, a backend of this kind a program made
	// itself (runtime.Config.Backend), with opts; nil: b's ListDevices.
	List func(b Backend, opts OpenOptions) ([]Device, error)
	// Describe says what b found ("using 2 CUDA GPU(s) through ...: a,
	// b"), for the one line the runtime prints.
	Describe func(b Backend, devs []Device) string
	// Missing says what "auto" lacks when Open fails ("no GPU to run
	// on"); Fix how to do without it when it was asked for by name ("":
	// Open fails only on bad options, whose errors say the fix). More
	// says how to get more devices, for an error naming one that is not
	// there.
	Missing, Fix, More string
}

var (
	kindsMu sync.Mutex
	kinds   []Kind
)

// Register makes a kind of backend known by its name. It panics if the
// name is taken or Open is nil, as database/sql.Register does.
func Register(k Kind) {
	kindsMu.Lock()
	defer kindsMu.Unlock()
	if k.Name == "" || k.Open == nil {
		panic("ringkernel: Register of a kind without Name or Open")
	}
	for _, o := range kinds {
		if o.Name == k.Name {
			panic("ringkernel: Register called twice for backend kind " + k.Name)
		}
	}
	kinds = append(kinds, k)
}

// Kinds lists the registered kinds in the order "auto" tries them.
func Kinds() []Kind {
	kindsMu.Lock()
	defer kindsMu.Unlock()
	out := slices.Clone(kinds)
	slices.SortStableFunc(out, func(a, b Kind) int { return a.Order - b.Order })
	return out
}

// ListDevices lists b's devices with opts: through k.List, else b's own
// ListDevices.
func (k Kind) ListDevices(b Backend, opts OpenOptions) ([]Device, error) {
	if k.List != nil {
		return k.List(b, opts)
	}
	if l, ok := b.(DeviceLister); ok {
		return l.ListDevices()
	}
	return nil, fmt.Errorf("a %s backend of type %T has no ListDevices method", k.Name, b)
}
