package otelsetup

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/ringactor/ringactor/internal/demo"
	ra "github.com/ringactor/ringactor/runtime"
)

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// start parses args as a program's flags and starts them; the test's
// cleanup shuts them down.
func start(t *testing.T, out io.Writer, args ...string) *Setup {
	t.Helper()
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	f := Register(fs, "otelsetup-test")
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	s, err := f.Start(ctxT(t), out)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Shutdown(context.Background()) })
	return s
}

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s, %v", url, resp.Status, err)
	}
	return string(body)
}

// -metrics stdout: after a pipeline has run, Shutdown exports the last
// collection, with the runtime's metrics and their units, to the output.
func TestMetricsStdout(t *testing.T) {
	var out bytes.Buffer
	s := start(t, &out, "-metrics", "stdout")
	rt, err := ra.New(ra.Config{Devices: ra.DeviceOptions{Backend: "sim", Log: io.Discard}, TracerProvider: s.TracerProvider, MeterProvider: s.MeterProvider})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	ctx := ctxT(t)
	p, err := rt.Build(ctx, demo.Guide("metered", [3]int{0, 0, 0}))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		if err := p.Send(ctx, ra.Data{Floats: []float32{float32(i)}}); err != nil {
			t.Fatal(err)
		}
	}
	// The pipeline stays open: its counters report until it closes.
	if err := s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	p.Close(ctx, true)
	for _, want := range []string{`"Name":"ringactor.pipeline.sent"`, `"Unit":"{message}"`, `"Name":"ringactor.device.memory.total"`, `"service.name","Value":{"Type":"STRING","Value":"otelsetup-test"}`} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the stdout exporter's output lacks %s:\n%.2000s", want, out.String())
		}
	}
}

// -pprof serves net/http/pprof at the address, until Shutdown.
func TestPprof(t *testing.T) {
	s := start(t, io.Discard, "-pprof", "127.0.0.1:0")
	url := "http://" + s.PprofAddr.String() + "/debug/pprof/"
	if body := get(t, url); !strings.Contains(body, "goroutine") {
		t.Fatalf("%s: %.500s", url, body)
	}
	if body := get(t, url+"cmdline"); body == "" {
		t.Fatal("no command line")
	}
	if err := s.Shutdown(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if resp, err := http.Get(url); err == nil {
		resp.Body.Close()
		t.Fatal("pprof still served after Shutdown")
	}
}

// -metrics prometheus serves the meter provider's metrics, with units, at
// -metrics-addr.
func TestMetricsPrometheus(t *testing.T) {
	s := start(t, io.Discard, "-metrics", "prometheus", "-metrics-addr", "127.0.0.1:0")
	c, err := s.MeterProvider.Meter("test").Int64Counter("ringactor.test.sent", metric.WithUnit("{message}"), metric.WithDescription("test"))
	if err != nil {
		t.Fatal(err)
	}
	c.Add(context.Background(), 3)
	body := get(t, "http://"+s.MetricsAddr.String()+"/metrics")
	if !strings.Contains(body, "ringactor_test_sent_total") || !strings.Contains(body, " 3") {
		t.Fatalf("scrape lacks the counter:\n%s", body)
	}
}

// -trace otlp goes through autoexport: OTEL_TRACES_EXPORTER picks the
// exporter (none: nothing is exported, console: the stdout exporter) and
// OTEL_EXPORTER_OTLP_PROTOCOL the OTLP transport, refused when unknown.
func TestTraceOTLPHonoursTheEnvironment(t *testing.T) {
	ctx := ctxT(t)
	t.Setenv("OTEL_TRACES_EXPORTER", "none")
	if exp, err := spanExporter(ctx, "otlp", io.Discard); err != nil || exp != nil {
		t.Fatalf("OTEL_TRACES_EXPORTER=none: %v, %v; want no exporter", exp, err)
	}
	if s := start(t, io.Discard, "-trace", "otlp"); s.TracerProvider != tracenoop.NewTracerProvider() {
		t.Fatalf("OTEL_TRACES_EXPORTER=none: tracer provider %T; want the no-op one", s.TracerProvider)
	}
	t.Setenv("OTEL_TRACES_EXPORTER", "console")
	exp, err := spanExporter(ctx, "otlp", io.Discard)
	if _, ok := exp.(*stdouttrace.Exporter); err != nil || !ok {
		t.Fatalf("OTEL_TRACES_EXPORTER=console: %T, %v; want the stdout exporter", exp, err)
	}
	t.Setenv("OTEL_TRACES_EXPORTER", "otlp")
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "carrier-pigeon")
	if exp, err := spanExporter(ctx, "otlp", io.Discard); err == nil {
		t.Fatalf("OTEL_EXPORTER_OTLP_PROTOCOL=carrier-pigeon accepted: %T", exp)
	}
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
	exp, err = spanExporter(ctx, "otlp", io.Discard)
	if err != nil || exp == nil {
		t.Fatalf("OTEL_EXPORTER_OTLP_PROTOCOL=grpc: %v", err)
	}
	exp.Shutdown(ctx)
	t.Setenv("OTEL_METRICS_EXPORTER", "none")
	if s := start(t, io.Discard, "-metrics", "otlp"); s.MeterProvider != metric.MeterProvider(metricnoop.NewMeterProvider()) {
		t.Fatalf("OTEL_METRICS_EXPORTER=none: meter provider %T; want the no-op one", s.MeterProvider)
	}
}

// -trace stdout writes the spans to the output; nothing is started by
// default or for a nil *Flags.
func TestTraceStdoutAndDefaults(t *testing.T) {
	var out bytes.Buffer
	s := start(t, &out, "-trace", "stdout")
	_, sp := s.TracerProvider.Tracer("test").Start(context.Background(), "hello")
	sp.End()
	if err := s.Shutdown(ctxT(t)); err != nil || !strings.Contains(out.String(), `"Name":"hello"`) {
		t.Fatalf("%v; output %q", err, out.String())
	}
	for _, s := range []*Setup{start(t, io.Discard), func() *Setup { s, _ := (*Flags)(nil).Start(ctxT(t), io.Discard); return s }()} {
		if s.TracerProvider != tracenoop.NewTracerProvider() || s.MeterProvider != metric.MeterProvider(metricnoop.NewMeterProvider()) || s.PprofAddr != nil || s.MetricsAddr != nil {
			t.Errorf("started %+v by default", s)
		}
	}
}

func TestFlagsRefused(t *testing.T) {
	for _, args := range [][]string{{"-trace", "jaeger"}, {"-metrics", "graphite"}, {"-metrics", "prometheus", "-metrics-addr", ""}, {"-pprof", "nowhere:-1"}} {
		fs := flag.NewFlagSet("test", flag.ContinueOnError)
		f := Register(fs, "t")
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		if s, err := f.Start(ctxT(t), io.Discard); err == nil {
			s.Shutdown(context.Background())
			t.Errorf("%v accepted", args)
		} else if args[0] != "-pprof" && !errors.Is(err, ErrFlag) {
			t.Errorf("%v: %v does not wrap ErrFlag", args, err)
		}
	}
}
