package runtime

import (
	"fmt"
	"os"
	"strings"

	drv "github.com/ringactor/ringactor/cuda"
	rk "github.com/ringactor/ringactor/ringkernel"
	rkcuda "github.com/ringactor/ringactor/ringkernel/cuda"
	"github.com/ringactor/ringactor/ringkernel/sim"
)

// backendKind is one kind of ring-kernel backend, as data: how to open one,
// how to list the devices of one, and how to say what was found. The
// runtime picks among them by name, or in order for "auto"; nothing else
// in the runtime asks which kind it runs on.
type backendKind struct {
	name string
	// open readies a backend of this kind and lists its devices, or says
	// why it cannot run here.
	open func(opts DeviceOptions) (rk.Backend, []Device, error)
	// devicesOf lists the devices of a backend of this kind that the
	// caller made (Config.Backend).
	devicesOf func(b rk.Backend, opts DeviceOptions) ([]Device, error)
	// describe says which devices b has, for the one line DiscoverDevices
	// prints.
	describe func(b rk.Backend, devs []Device) string
	// missing says what "auto" lacks when this kind cannot open ("no GPU
	// to run on"); fix is how to do without it when it was asked for by
	// name. A kind without fix (the simulator) fails only on bad options,
	// whose errors say the fix themselves.
	missing, fix string
}

// backendKinds are the kinds the runtime knows, in the order "auto" tries
// them: a GPU when the driver loads and reports one, else the simulator,
// which runs anywhere.
var backendKinds = []backendKind{
	{name: "cuda", open: openCUDA, devicesOf: cudaDevicesOf, describe: describeCUDA,
		missing: "no GPU to run on",
		fix:     `choose backend "sim" (or "auto") to run on simulated devices instead`},
	{name: "sim", open: openSim, devicesOf: simDevicesOf, describe: describeSim},
}

// selection is a chosen backend and the registry of its devices.
type selection struct {
	backend rk.Backend
	reg     *Registry
	// owned: the selection opened the backend, so its runtime closes it.
	owned bool
}

// selectBackend picks the backend opts.Backend names among kinds, or uses
// injected, and prints one line on opts.Log saying what it found and why
// it passed over the kinds it could not open.
func selectBackend(kinds []backendKind, opts DeviceOptions, injected rk.Backend) (selection, error) {
	if opts.Log == nil {
		opts.Log = os.Stderr
	}
	want := opts.Backend
	if want == "" {
		want = "auto"
	}
	names := make([]string, len(kinds))
	byName := map[string]*backendKind{}
	for i := range kinds {
		names[i] = kinds[i].name
		byName[kinds[i].name] = &kinds[i]
	}
	if want != "auto" && byName[want] == nil {
		return selection{}, fmt.Errorf("%w: backend %q; choose auto, %s", ErrBackend, want, strings.Join(names, ", "))
	}
	if injected != nil {
		return useInjected(byName, names, want, opts, injected)
	}
	var why []string
	for i := range kinds {
		k := &kinds[i]
		if want != "auto" && want != k.name {
			continue
		}
		b, devs, err := k.open(opts)
		if err != nil {
			if want == "auto" && i < len(kinds)-1 {
				why = append(why, fmt.Sprintf("%s (%v)", k.missing, err))
				continue
			}
			if k.fix == "" {
				return selection{}, err
			}
			return selection{}, fmt.Errorf("%w: %s: %w; %s", ErrBackend, k.name, err, k.fix)
		}
		note := "ringactor: " + k.describe(b, devs)
		if len(why) > 0 {
			note = fmt.Sprintf("ringactor: %s; %s", strings.Join(why, "; "), k.describe(b, devs))
		}
		r := newRegistry(k.name, devs, note)
		fmt.Fprintln(opts.Log, r.note)
		return selection{backend: b, reg: r, owned: true}, nil
	}
	return selection{}, fmt.Errorf("%w: %s", ErrBackend, strings.Join(why, "; ")) // kinds has no fallback
}

// useInjected lists the devices of a backend the caller made.
func useInjected(byName map[string]*backendKind, names []string, want string, opts DeviceOptions, b rk.Backend) (selection, error) {
	k := byName[b.Name()]
	if k == nil {
		return selection{}, fmt.Errorf("%w: Config.Backend is a %q backend; the runtime lists the devices of %s backends only",
			ErrBackend, b.Name(), strings.Join(names, ", "))
	}
	if want != "auto" && want != k.name {
		return selection{}, fmt.Errorf("%w: Config.Backend is a %s backend but DeviceOptions.Backend asks for %s; leave that auto or make them agree",
			ErrBackend, k.name, want)
	}
	devs, err := k.devicesOf(b, opts)
	if err != nil {
		return selection{}, fmt.Errorf("%w: listing the devices of Config.Backend (%s): %w", ErrBackend, k.name, err)
	}
	r := newRegistry(k.name, devs, "ringactor: "+k.describe(b, devs)+", on the backend given in Config")
	fmt.Fprintln(opts.Log, r.note)
	return selection{backend: b, reg: r}, nil
}

// openCUDA readies the CUDA backend. Where it cannot, the error wraps the
// cause (cuda.ErrNoDriver where there is no driver) and says so when NVML
// sees GPUs anyway (a driver library that does not load, or a build
// without cgo).
func openCUDA(DeviceOptions) (rk.Backend, []Device, error) {
	b, err := rkcuda.New(rkcuda.Options{})
	if err != nil {
		if gpus, nerr := nvmlDevices(); nerr == nil && len(gpus) > 0 {
			names := make([]string, len(gpus))
			for i, g := range gpus {
				names[i] = g.Name
			}
			err = fmt.Errorf("%w; NVML sees %d GPU(s) (%s)", err, len(gpus), strings.Join(names, ", "))
		}
		return nil, nil, err
	}
	devs, err := cudaDevices(b.Driver())
	if err != nil {
		b.Close()
		return nil, nil, err
	}
	return b, devs, nil
}

// driverBackend is a backend that runs on the CUDA driver and shares it,
// as *rkcuda.Backend does.
type driverBackend interface{ Driver() *drv.Driver }

func cudaDevicesOf(b rk.Backend, _ DeviceOptions) ([]Device, error) {
	db, ok := b.(driverBackend)
	if !ok {
		return nil, fmt.Errorf("a cuda backend of type %T has no Driver method to list its devices through", b)
	}
	return cudaDevices(db.Driver())
}

func describeCUDA(b rk.Backend, devs []Device) string {
	names := make([]string, len(devs))
	for i, d := range devs {
		names[i] = d.Name
	}
	via := "the CUDA driver"
	if db, ok := b.(driverBackend); ok {
		v := db.Driver().Version()
		via = fmt.Sprintf("%s (CUDA %d.%d)", db.Driver().Path(), v/1000, v%1000/10)
	}
	return fmt.Sprintf("using %d CUDA GPU(s) through %s: %s (P2P %s)", len(devs), via, strings.Join(names, ", "), describeP2P(devs))
}

func openSim(opts DeviceOptions) (rk.Backend, []Device, error) {
	devs, err := simDevices(opts)
	if err != nil {
		return nil, nil, err
	}
	return &sim.Backend{Devices: len(devs), Cost: opts.SimCost}, devs, nil
}

// simDevicesOf lists a given sim backend's devices: as many as it accepts
// (unless opts says), with the topology and memory opts gives.
func simDevicesOf(b rk.Backend, opts DeviceOptions) ([]Device, error) {
	if sb, ok := b.(*sim.Backend); ok && opts.SimDevices == 0 && sb.Devices > 0 {
		opts.SimDevices = sb.Devices
	}
	return simDevices(opts)
}

func describeSim(_ rk.Backend, devs []Device) string {
	return fmt.Sprintf("using %d simulated devices (P2P %s)", len(devs), describeP2P(devs))
}
