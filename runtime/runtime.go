package runtime

import (
	"fmt"
	"io"
	"log/slog"
	"sync"

	"github.com/asynkron/protoactor-go/actor"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	rk "github.com/ringactor/ringactor/ringkernel"
	"github.com/ringactor/ringactor/ringkernel/sim"
)

// Config configures a Runtime. The zero value discovers devices, makes its
// own actor system, and uses the global OpenTelemetry providers.
type Config struct {
	Devices DeviceOptions
	// System is the actor system stage actors are spawned in (default: a
	// new one, shut down by Close).
	System *actor.ActorSystem
	// TracerProvider and MeterProvider receive spans and metrics (default:
	// otel's global providers).
	TracerProvider trace.TracerProvider
	MeterProvider  metric.MeterProvider
}

// Runtime owns the devices, the ring-kernel backend and the actor system
// pipelines are built in.
type Runtime struct {
	reg     *Registry
	backend rk.Backend
	system  *actor.ActorSystem
	own     bool
	tp      trace.TracerProvider
	mp      metric.MeterProvider

	mu    sync.Mutex
	names map[string]bool
	node  *Node // set by Join
}

// New discovers devices and readies a backend for them.
func New(cfg Config) (*Runtime, error) {
	reg, err := DiscoverDevices(cfg.Devices)
	if err != nil {
		return nil, err
	}
	rt := &Runtime{reg: reg, system: cfg.System, tp: cfg.TracerProvider, mp: cfg.MeterProvider, names: map[string]bool{}}
	switch reg.BackendName() {
	case "sim":
		rt.backend = &sim.Backend{Devices: len(reg.Devices()), Cost: cfg.Devices.SimCost}
	default:
		return nil, fmt.Errorf("%w: %s", ErrBackend, reg.BackendName())
	}
	if rt.system == nil {
		rt.system = actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
			return slog.New(slog.NewTextHandler(io.Discard, nil)) // stage actors report through errors and dead letters
		}))
		rt.own = true
	}
	if rt.tp == nil {
		rt.tp = otel.GetTracerProvider()
	}
	if rt.mp == nil {
		rt.mp = otel.GetMeterProvider()
	}
	return rt, nil
}

// Registry is the runtime's devices.
func (rt *Runtime) Registry() *Registry { return rt.reg }

// System is the actor system stage actors live in.
func (rt *Runtime) System() *actor.ActorSystem { return rt.system }

// Backend is the ring-kernel backend stages run on.
func (rt *Runtime) Backend() rk.Backend { return rt.backend }

// Close shuts down the actor system if the runtime made it. Close
// pipelines first.
func (rt *Runtime) Close() {
	if rt.own && !rt.system.IsStopped() { // a node's Leave may have stopped it
		rt.system.Shutdown()
	}
}

func (rt *Runtime) claimName(name string) error {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.names[name] {
		return fmt.Errorf("%w: a pipeline named %q exists in this runtime; pick another name", ErrBadPipeline, name)
	}
	rt.names[name] = true
	return nil
}

func (rt *Runtime) releaseName(name string) {
	rt.mu.Lock()
	delete(rt.names, name)
	rt.mu.Unlock()
}
