package runtime

import (
	"fmt"
	"os"
	"strings"

	rk "github.com/ringactor/ringactor/ringkernel"
	// The backends linked by default: each registers its kind
	// (ringkernel.Register), and the runtime picks among the kinds as data.
	// The CUDA backend is linked so that "auto" finds a GPU with no
	// configuration; see the package doc.
	_ "github.com/ringactor/ringactor/ringkernel/cuda"
	"github.com/ringactor/ringactor/ringkernel/sim"
)

// selection is a chosen backend, the CPU's engine beside it, and the
// registry of their devices.
type selection struct {
	backend, cpu rk.Backend
	reg          *Registry
	// owned: the selection opened the backend, so its runtime closes it.
	owned bool
}

// openOptions passes the simulated devices' options on to a backend.
func openOptions(opts DeviceOptions) rk.OpenOptions {
	return rk.OpenOptions{Devices: opts.SimDevices, Topology: opts.SimP2P, Memory: opts.SimMemory, MemoryOf: opts.SimMemoryOf, Cost: opts.SimCost}
}

// selectBackend picks the backend opts.Backend names among kinds (in the
// order "auto" tries them), or uses injected, and prints one line on
// opts.Log saying what it found and why it passed over the kinds it could
// not open.
func selectBackend(kinds []rk.Kind, opts DeviceOptions, injected rk.Backend) (selection, error) {
	if opts.Log == nil {
		opts.Log = os.Stderr
	}
	want := opts.Backend
	if want == "" {
		want = "auto"
	}
	names := make([]string, len(kinds))
	byName := map[string]*rk.Kind{}
	for i := range kinds {
		names[i] = kinds[i].Name
		byName[kinds[i].Name] = &kinds[i]
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
		if want != "auto" && want != k.Name {
			continue
		}
		b, devs, err := openKind(k, opts)
		if err != nil {
			if want == "auto" && i < len(kinds)-1 {
				why = append(why, fmt.Sprintf("%s (%v)", k.Missing, err))
				continue
			}
			if k.Fix == "" {
				return selection{}, err
			}
			return selection{}, fmt.Errorf("%w: %s: %w; %s", ErrBackend, k.Name, err, k.Fix)
		}
		note := describe(k, b, devs)
		if len(why) > 0 {
			note = strings.Join(why, "; ") + "; " + note
		}
		sel := newSelection(k, b, devs, "ringactor: "+note, opts)
		sel.owned = true
		fmt.Fprintln(opts.Log, sel.reg.note)
		return sel, nil
	}
	return selection{}, fmt.Errorf("%w: %s", ErrBackend, strings.Join(why, "; ")) // kinds has no fallback
}

// openKind opens a backend of kind k and lists its devices.
func openKind(k *rk.Kind, opts DeviceOptions) (rk.Backend, []Device, error) {
	b, err := k.Open(openOptions(opts))
	if err != nil {
		return nil, nil, err
	}
	devs, err := k.ListDevices(b, openOptions(opts))
	if err != nil {
		closeBackend(b)
		return nil, nil, err
	}
	return b, devs, nil
}

// useInjected lists the devices of a backend the caller made.
func useInjected(byName map[string]*rk.Kind, names []string, want string, opts DeviceOptions, b rk.Backend) (selection, error) {
	k := byName[b.Name()]
	if k == nil {
		return selection{}, fmt.Errorf("%w: Config.Backend is a %q backend; the runtime lists the devices of %s backends only",
			ErrBackend, b.Name(), strings.Join(names, ", "))
	}
	if want != "auto" && want != k.Name {
		return selection{}, fmt.Errorf("%w: Config.Backend is a %s backend but DeviceOptions.Backend asks for %s; leave that auto or make them agree",
			ErrBackend, k.Name, want)
	}
	devs, err := k.ListDevices(b, openOptions(opts))
	if err != nil {
		return selection{}, fmt.Errorf("%w: listing the devices of Config.Backend (%s): %w", ErrBackend, k.Name, err)
	}
	sel := newSelection(k, b, devs, "ringactor: "+describe(k, b, devs)+", on the backend given in Config", opts)
	fmt.Fprintln(opts.Log, sel.reg.note)
	return sel, nil
}

// newSelection adds the CPU's engine beside b, whose devices are gpus,
// and lists both in a registry.
func newSelection(k *rk.Kind, b rk.Backend, gpus []Device, note string, opts DeviceOptions) selection {
	id := len(gpus)
	cpu := sim.NewCPU(opts.SimCost[id])
	r := newRegistry(k.Name, gpus, cpuDevice(cpu, id), note)
	r.more = k.More
	return selection{backend: b, cpu: cpu, reg: r}
}

// describe is the kind's line on what b found, with its peer pairs.
func describe(k *rk.Kind, b rk.Backend, devs []Device) string {
	say := fmt.Sprintf("using %d %s devices", len(devs), k.Name)
	if k.Describe != nil {
		say = k.Describe(b, devs)
	}
	return fmt.Sprintf("%s (P2P %s)", say, describeP2P(devs))
}

// closeBackend closes b where it holds resources (the CUDA backend).
func closeBackend(b rk.Backend) error {
	if c, ok := b.(interface{ Close() error }); ok {
		return c.Close()
	}
	return nil
}
