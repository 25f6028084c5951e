package runtime

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/ringactor/ringactor/internal/ctxcheck"
	"github.com/ringactor/ringactor/internal/gate"
	rk "github.com/ringactor/ringactor/ringkernel"
	"github.com/ringactor/ringactor/runtime/internal/buffers"
	"github.com/ringactor/ringactor/runtime/internal/devreg"
	"github.com/ringactor/ringactor/runtime/internal/directory"
	"github.com/ringactor/ringactor/runtime/internal/extid"
	"github.com/ringactor/ringactor/runtime/internal/links"
	"github.com/ringactor/ringactor/runtime/internal/meter"
	"github.com/ringactor/ringactor/runtime/internal/stageactor"
)

// Config configures a Runtime. The zero value picks a backend (a GPU where
// the CUDA backend can run, else simulated devices), makes its own actor
// system, uses the global OpenTelemetry providers, and prints nothing.
type Config struct {
	// Devices chooses the backend by name (Devices.Backend: auto, sim or
	// cuda) and how simulated devices look.
	Devices DeviceOptions
	// Backend, when set, runs the stages instead of a backend the runtime
	// opens (a sim backend with costs of its own, a CUDA backend with
	// other Options, a wrapper that records what it is asked). Its Name
	// says how its devices are listed: "sim" per Devices' Sim options,
	// "cuda" through its driver. The caller keeps it: close it after the
	// runtime.
	Backend rk.Backend
	// System is the actor system stage actors are spawned in (default: a
	// new one logging to Logger, shut down by Close).
	System *actor.ActorSystem
	// TracerProvider and MeterProvider receive spans and metrics (default:
	// otel's global providers).
	TracerProvider trace.TracerProvider
	MeterProvider  metric.MeterProvider
	// Logger receives New's Info record "ringactor devices" (the backend,
	// its devices, why "auto" passed over others) and protoactor's logs
	// (component=protoactor) from the actor system New makes, remote and
	// cluster included. nil discards them: the library prints nothing.
	Logger *slog.Logger
}

// Runtime owns the devices, the ring-kernel backend and the actor system
// pipelines are built in.
type Runtime struct {
	reg *Registry
	// backend runs every device's kernels: gpus for the GPUs, the sim
	// engine for the CPU.
	backend rk.Backend
	gpus    rk.Backend
	// release closes a backend the runtime opened that holds resources
	// (device memory, contexts); nil for the simulator and for
	// Config.Backend.
	release func() error
	system  *actor.ActorSystem
	own     bool
	tp      trace.TracerProvider
	mp      metric.MeterProvider

	// meter and otelMeter hold the previous readings of Metrics and of
	// the OpenTelemetry callback, for rates.
	meter, otelMeter *meter.Rates
	metricsReg       metric.Registration

	// dir holds the pipelines by name (for Close) and the claimed roles.
	dir directory.Directory[Pipeline, extid.Role]

	closed atomic.Bool
	// stages spawns the stage actors, and takes data that reaches a
	// stage's PID after its actor stopped (orphans).
	stages *stageactor.Actors[Data]

	links *links.Ledger // every link made and not yet freed, with its kernels
	bufs  *buffers.Set  // the buffers allocated and not freed

	// stall and pumpStall hold the watchdogs and the egress pumps (tests'
	// model of a process stall).
	stall, pumpStall gate.Gate
}

// ErrRuntimeClosed: the runtime is closed; make a new one.
var ErrRuntimeClosed = errors.New("ringactor: runtime closed")

// ErrNilContext: a nil context.Context was passed where a call needs one.
var ErrNilContext = ctxcheck.ErrNil

// ErrNotSent: a send refused before it did anything (a nil ctx, or one
// that had already ended): its messages were neither sent nor counted,
// and no dead letter was made. Every other error of a send (Send,
// SendBatch, Request, a group's or a cluster pipeline's) is about
// messages that were counted, and that ended as dead letters.
var ErrNotSent = ctxcheck.ErrNotSent

// New picks a backend (Config.Backend, or the one Config.Devices.Backend
// names) and lists its devices, saying on Config.Logger which it found,
// and, for "auto", why it passed over a GPU (Registry.Note says the same).
func New(cfg Config) (*Runtime, error) { return newRuntime(cfg, rk.Kinds()) }

func newRuntime(cfg Config, kinds []rk.Kind) (*Runtime, error) {
	sel, err := devreg.Open(kinds, devregOptions(cfg.Devices, cfg.Logger), cfg.Backend)
	if err != nil {
		return nil, err
	}
	devs, release := sel.Devices()
	rt := &Runtime{reg: sel.Reg, gpus: sel.Backend, backend: devs, release: release, system: cfg.System, tp: cfg.TracerProvider, mp: cfg.MeterProvider}
	rt.links, rt.bufs = links.NewLedger(devs, rt.reg), buffers.New(devs, rt.reg, ErrRuntimeClosed)
	if rt.system == nil {
		plog := devreg.Logger(cfg.Logger, "protoactor")
		rt.system = actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return plog }))
		rt.own = true
	}
	extid.Register(rt.system.Extensions, extension{}) // once per actor system
	if rt.tp == nil {
		rt.tp = otel.GetTracerProvider()
	}
	if rt.mp == nil {
		rt.mp = otel.GetMeterProvider()
	}
	rt.stages = stageactor.New(rt.system, &stageProtocol)
	rt.meter, rt.otelMeter = meter.NewRates(time.Now()), meter.NewRates(time.Now())
	if err := rt.registerMetrics(); err != nil {
		return nil, fmt.Errorf("ringactor: device metrics: %w", err)
	}
	return rt, nil
}

// Registry is the runtime's devices.
func (rt *Runtime) Registry() *Registry { return rt.reg }

// System is the actor system stage actors live in.
func (rt *Runtime) System() *actor.ActorSystem { return rt.system }

// TracerProvider and MeterProvider are where the runtime's spans and
// metrics go (Config's, or the global ones).
func (rt *Runtime) TracerProvider() trace.TracerProvider { return rt.tp }
func (rt *Runtime) MeterProvider() metric.MeterProvider  { return rt.mp }

// claim takes role for one user of the runtime: it reports false if the
// role is taken already. release gives it back. Sub-packages that
// configure the runtime's actor system once, as runtime/cluster's Join
// does, claim it first (ext.Host.Claim).
func (rt *Runtime) claim(role extid.Role) (release func(), ok bool) { return rt.dir.ClaimRole(role) }

// Backend is the ring-kernel backend the GPUs run on (the CPU device has
// its own engine beside it).
func (rt *Runtime) Backend() rk.Backend { return rt.gpus }

// Close is Shutdown without drain, bounded by ten seconds a pipeline:
// each pipeline still open dead-letters what it holds ("shutdown without
// drain"). Close them yourself first, or call Shutdown, to drain.
func (rt *Runtime) Close() error { return rt.shutdown(nil) }

// Shutdown closes the pipelines still open with drain until ctx ends (the
// drains are then cut short, their messages dead-lettered), shuts down
// the actor system if the runtime made it, and releases the backend if
// the runtime opened one that holds device memory (CUDA's). The error
// says what could not be released. Afterwards Build returns
// ErrRuntimeClosed, and data sent to the closed pipelines' PIDs is still
// counted and dead-lettered ("pipeline closed") while the actor system
// runs. A nil ctx is refused; a second Shutdown or Close does nothing.
func (rt *Runtime) Shutdown(ctx context.Context) error {
	if err := ctxcheck.NotNil(ctx, "Runtime.Shutdown"); err != nil {
		return err
	}
	return rt.shutdown(ctx)
}

// shutdown is Shutdown, or for a nil ctx Close.
func (rt *Runtime) shutdown(ctx context.Context) error {
	if !rt.closed.CompareAndSwap(false, true) {
		return nil
	}
	var errs []error
	for _, p := range rt.dir.Close() {
		pctx, cancel := ctx, context.CancelFunc(func() {})
		if ctx == nil {
			pctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
		}
		if err := p.Close(pctx, ctx != nil); err != nil {
			errs = append(errs, fmt.Errorf("ringactor: closing pipeline %q left open: %w", p.spec.Name, err))
		}
		cancel()
	}
	if _, err := rt.bufs.Close(); err != nil { // after the pipelines: none is bound any more
		errs = append(errs, fmt.Errorf("ringactor: freeing buffers: %w", err))
	}
	if rt.metricsReg != nil {
		errs = append(errs, rt.metricsReg.Unregister())
		rt.metricsReg = nil
	}
	if rt.own && !rt.system.IsStopped() { // a node's Leave may have stopped it
		rt.system.Shutdown()
	}
	if rt.own {
		rt.stages.Close()
	}
	if rt.release != nil {
		errs = append(errs, rt.release())
		rt.release = nil
	}
	return errors.Join(errs...)
}

// retireStage replaces a closed pipeline's stage, for its PID, with what
// a late send needs of it: the pipeline's account, and how to dead-letter
// a message as the stage refuses it now (a request's sender gets a
// *RequestError; no trace, the pipeline's telemetry has closed). The
// stage itself is not kept for as long as the runtime lives, so the
// closure holds none of it. A later pipeline under the same name
// replaces the entry.
func (rt *Runtime) retireStage(s *stage) {
	reason, err := s.refusal()
	if reason == ReasonPipelineClosed {
		err = nil // made when needed: most closed stages never see a late send
	}
	sinks, name, device := s.p.sinks, s.spec.Name, s.spec.Device // shared by the pipeline's stages
	rt.stages.Retire(s.pid, s, &stageactor.Closed[Data]{Acct: s.p.acct, Refuse: func(id uint64, sender *actor.PID) {
		cause := err
		if cause == nil {
			cause = fmt.Errorf("%w: pipeline %q", ErrClosed, sinks.Name)
		}
		dl := DeadLetter{ID: id, Stage: name, Device: device, Reason: reason, Err: cause}
		if sender != nil {
			rt.system.Root.Send(sender, &RequestError{Dead: dl})
		}
		rt.tell(sinks, dl)
	}})
}

// openPipelines lists the pipelines built and not yet closed.
func (rt *Runtime) openPipelines() []*Pipeline { return rt.dir.Open() }

// claimName takes a pipeline's name for its build.
func (rt *Runtime) claimName(name string) error {
	if err := rt.dir.Claim(name); err != nil {
		return fmt.Errorf("%w: a pipeline named %q exists in this runtime; pick another name", ErrBadPipeline, name)
	}
	return nil
}

// built records that the pipeline claiming its name is built, for Close.
// It refuses once the runtime is closing: Close may have listed the open
// pipelines already.
func (rt *Runtime) built(p *Pipeline) error {
	if err := rt.dir.Built(p.spec.Name, p); err != nil {
		return fmt.Errorf("%w while pipeline %q was being built; make a new Runtime", ErrRuntimeClosed, p.spec.Name)
	}
	return nil
}

func (rt *Runtime) releaseName(name string) { rt.dir.Release(name) }
