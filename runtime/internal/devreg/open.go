package devreg

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"

	rk "github.com/ringactor/ringactor/ringkernel"
	"github.com/ringactor/ringactor/ringkernel/sim"
)

// ErrBackend: the chosen backend cannot run here (runtime.ErrBackend).
var ErrBackend = errors.New("ringactor: backend unavailable")

// Options chooses how devices are found (runtime.DeviceOptions, as the
// backends take it).
type Options struct {
	// Backend names a kind, or "auto" (also when empty).
	Backend string
	// Open is handed to the kind's Open and List; its Cost also prices
	// the CPU's messages, by the CPU's device id.
	Open rk.OpenOptions
	// Logger receives what was found as one Info record (report); when
	// it is nil, Log receives the one line instead (runtime's deprecated
	// DeviceOptions.Log); when both are nil, nothing is said.
	Logger *slog.Logger
	Log    io.Writer
}

// Selection is a chosen backend, the CPU's engine beside it, and the
// registry of their devices.
type Selection struct {
	Backend, CPU rk.Backend
	Reg          *rk.Registry
	// Owned: the selection opened the backend, so its runtime closes it.
	Owned bool
}

// Devices is the selection's mux (the GPUs' backend and the CPU's engine
// behind one Backend), and what closes it: nil unless the selection
// opened a backend that holds resources (CUDA's; not the simulator, nor
// an injected backend, which its caller closes).
func (s Selection) Devices() (*Mux, func() error) {
	m := NewMux(s.Backend, s.Reg.CPUDevice().ID, s.CPU)
	if _, ok := s.Backend.(interface{ Close() error }); ok && s.Owned {
		return m, m.Close
	}
	return m, nil
}

// Discover lists the devices of the backend opts.Backend names among
// kinds, as Open would choose it, then closes the backend again.
func Discover(kinds []rk.Kind, opts Options) (*rk.Registry, error) {
	sel, err := Open(kinds, opts, nil)
	if err != nil {
		return nil, err
	}
	CloseBackend(sel.Backend) // nothing ran on it
	return sel.Reg, nil
}

// Open picks the backend opts.Backend names among kinds (in the order
// "auto" tries them), or uses injected, and reports what it found and why
// it passed over the kinds it could not open (report).
func Open(kinds []rk.Kind, opts Options, injected rk.Backend) (Selection, error) {
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
		return Selection{}, fmt.Errorf("%w: backend %q; choose auto, %s", ErrBackend, want, strings.Join(names, ", "))
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
				return Selection{}, err
			}
			name := k.Name + ": " // unless err names it already ("cuda: driver not found")
			if strings.HasPrefix(err.Error(), name) {
				name = ""
			}
			return Selection{}, fmt.Errorf("%w: %s%w; %s", ErrBackend, name, err, k.Fix)
		}
		sel := newSelection(k, b, devs, found{passedOver: why}, opts)
		sel.Owned = true
		return sel, nil
	}
	return Selection{}, fmt.Errorf("%w: %s", ErrBackend, strings.Join(why, "; ")) // kinds has no fallback
}

// openKind opens a backend of kind k and lists its devices.
func openKind(k *rk.Kind, opts Options) (rk.Backend, []rk.Device, error) {
	b, err := k.Open(opts.Open)
	if err != nil {
		return nil, nil, err
	}
	devs, err := k.ListDevices(b, opts.Open)
	if err != nil {
		CloseBackend(b)
		return nil, nil, err
	}
	return b, devs, nil
}

// useInjected lists the devices of a backend the caller made.
func useInjected(byName map[string]*rk.Kind, names []string, want string, opts Options, b rk.Backend) (Selection, error) {
	k := byName[b.Name()]
	if k == nil {
		return Selection{}, fmt.Errorf("%w: Config.Backend is a %q backend; the runtime lists the devices of %s backends only",
			ErrBackend, b.Name(), strings.Join(names, ", "))
	}
	if want != "auto" && want != k.Name {
		return Selection{}, fmt.Errorf("%w: Config.Backend is a %s backend but DeviceOptions.Backend asks for %s; leave that auto or make them agree",
			ErrBackend, k.Name, want)
	}
	devs, err := k.ListDevices(b, opts.Open)
	if err != nil {
		return Selection{}, fmt.Errorf("%w: listing the devices of Config.Backend (%s): %w", ErrBackend, k.Name, err)
	}
	return newSelection(k, b, devs, found{given: true}, opts), nil
}

// newSelection adds the CPU's engine beside b, whose devices are gpus,
// lists both in a registry whose note says f, and reports f.
func newSelection(k *rk.Kind, b rk.Backend, gpus []rk.Device, f found, opts Options) Selection {
	id := len(gpus)
	cpu := sim.NewCPU(opts.Open.Cost[id])
	dev := cpuDevice(cpu, id)
	f.kind, f.gpus, f.devices, f.cpu = k.Name, len(gpus), describe(k, b, gpus), describeCPU(dev)
	sel := Selection{Backend: b, CPU: cpu, Reg: rk.NewRegistry(*k, gpus, dev, f.note())}
	report(opts, f)
	return sel
}

// describe is the kind's line on what b found, with its peer pairs.
func describe(k *rk.Kind, b rk.Backend, devs []rk.Device) string {
	say := fmt.Sprintf("using %d %s devices", len(devs), k.Name)
	if k.Describe != nil {
		say = k.Describe(b, devs)
	}
	return fmt.Sprintf("%s (P2P %s)", say, describeP2P(devs))
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

// CloseBackend closes b where it holds resources (the CUDA backend).
func CloseBackend(b rk.Backend) error {
	if c, ok := b.(interface{ Close() error }); ok {
		return c.Close()
	}
	return nil
}
