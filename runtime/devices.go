package runtime

import (
	"io"
	"log/slog"
	"time"

	rk "github.com/ringactor/ringactor/ringkernel"
	// The backends linked by default: each registers its kind
	// (ringkernel.Register), and the runtime picks among the kinds as data.
	// The CUDA backend is linked so that "auto" finds a GPU with no
	// configuration; see the package doc.
	_ "github.com/ringactor/ringactor/ringkernel/cuda"
	"github.com/ringactor/ringactor/ringkernel/sim"
	"github.com/ringactor/ringactor/runtime/internal/devreg"
)

// Device is one device ringactor can place stages on, as its backend
// lists it (ringkernel.Device), numbered in the registry.
type Device = rk.Device

// Environment variables read by DiscoverDevices.
const (
	// SimDevicesEnv is the number of simulated devices (default 4).
	SimDevicesEnv = sim.DevicesEnv
	// SimP2PEnv is the simulated topology: "all" (default), "none", or
	// pairs with their link kind, such as "0-1:nv4,2-3:nv2,*:sys"
	// (sim.P2PEnv gives the rules).
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
	// Log receives the line Registry.Note says, from DiscoverDevices, and
	// from New when Config.Logger is nil.
	//
	// Deprecated: set Config.Logger; nil no longer means os.Stderr. It is
	// removed in the next release.
	Log io.Writer
}

// ErrNoDevice: a device id that is not in the registry, or no device meets
// a requirement (ringkernel.ErrNoDevice).
var ErrNoDevice = rk.ErrNoDevice

// ErrBackend: the chosen backend cannot run here.
var ErrBackend = devreg.ErrBackend

// Registry is the set of devices found at start: the GPUs of one backend
// (ids 0..n-1), then the CPU (id n). It is ringkernel.Registry, whose doc
// lists its methods (Lookup, Select, Connection, Chain, ...);
// DiscoverDevices and Runtime.Registry make one.
type Registry = rk.Registry

// devregOptions is opts, and the logger, as devreg takes them.
func devregOptions(opts DeviceOptions, l *slog.Logger) devreg.Options {
	return devreg.Options{Backend: opts.Backend, Logger: l, Log: opts.Log, Open: rk.OpenOptions{Devices: opts.SimDevices, Topology: opts.SimP2P,
		Memory: opts.SimMemory, MemoryOf: opts.SimMemoryOf, Cost: opts.SimCost}}
}

// DiscoverDevices lists the devices of the backend opts.Backend names, as
// New would choose it: for "auto", the GPUs the CUDA driver reports when
// the CUDA backend can run them, else simulated devices; the registry's
// Note says why there is no GPU ("cuda" is then an error wrapping the
// cause). It opens the backend only to ask it, and closes it again.
func DiscoverDevices(opts DeviceOptions) (*Registry, error) {
	return devreg.Discover(rk.Kinds(), devregOptions(opts, nil))
}

// Requirements select devices (Registry.Select): ringkernel.Requirements,
// whose doc gives the fields.
type Requirements = rk.Requirements
