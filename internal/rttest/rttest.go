// Package rttest holds what the tests of package runtime and of its
// sub-packages share: a runtime with recorded spans and metrics, a bounded
// test context, the goroutine-leak check, and the backend the
// runtime-level suites run on (BackendEnv: sim, cpu or cuda) with its skip
// table (Lacks), the one place that says which case cannot run where, and
// why. The ring-kernel backends' own conformance suite is
// ringkernel/ringkerneltest.
package rttest

import (
	"context"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.uber.org/goleak"

	"github.com/ringactor/ringactor/cuda/cudatest"
	ra "github.com/ringactor/ringactor/runtime"
)

// Env is a runtime whose spans and metrics the test can read.
type Env struct {
	RT      *ra.Runtime
	Spans   *tracetest.SpanRecorder
	TP      *sdktrace.TracerProvider
	Metrics *sdkmetric.ManualReader

	under string // the backend under test, for Device (Devices sets it)
}

// New makes a runtime on the devices opts describe; the test's cleanup
// closes it and fails the test if that fails.
func New(t testing.TB, opts ra.DeviceOptions) *Env {
	t.Helper()
	e := &Env{Spans: tracetest.NewSpanRecorder(), Metrics: sdkmetric.NewManualReader()}
	e.TP = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(e.Spans))
	var err error
	e.RT, err = ra.New(ra.Config{
		Devices:        opts,
		TracerProvider: e.TP, MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(e.Metrics)),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.RT.Close(); err != nil {
			t.Error(err)
		}
		e.TP.Shutdown(context.Background())
	})
	return e
}

// Ctx bounds a test's blocking calls, cancelled at cleanup. It guards
// against a hang, not a slow host: three minutes, since over the emulated
// driver on a loaded machine a Build that compiles a user op with the
// host compiler took up to two (make flake-load), where 30 s ran out.
func Ctx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// Main runs a package's tests and fails them if any goroutine is left
// running. protoactor's dead-letter throttle runs a timer goroutine of its
// own for a second after a message goes to a stopped actor; it ends by
// itself and is ignored.
// On the emulated driver it also fails the run when a call broke a rule a
// real driver punishes (cudatest.CheckRules).
func Main(m *testing.M) {
	goleak.VerifyTestMain(checked{m}, goleak.IgnoreTopFunction("github.com/asynkron/protoactor-go/actor.NewDeadLetter.NewThrottle.func4.1"))
}

type checked struct{ m *testing.M }

func (c checked) Run() int { return cudatest.CheckRules(c.m.Run()) }
