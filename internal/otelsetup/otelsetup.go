// Package otelsetup is the OpenTelemetry of ringactor's programs (the
// examples, `ringactor top`): the flags that choose where spans and
// metrics go and whether pprof is served, and the providers, readers and
// servers they ask for, flushed and stopped together at exit. Hand
// Setup's TracerProvider and MeterProvider to runtime.Config.
//
//	-trace none|stdout|otlp        spans: none, JSON to the program's output, or
//	                               as the standard environment says (autoexport:
//	                               OTEL_TRACES_EXPORTER, default otlp;
//	                               OTEL_EXPORTER_OTLP_PROTOCOL grpc or http/protobuf;
//	                               OTEL_EXPORTER_OTLP_ENDPOINT ...)
//	-metrics none|stdout|otlp|prometheus
//	                               metrics: none, JSON to the program's output
//	                               (every OTEL_METRIC_EXPORT_INTERVAL, 60 s, and at
//	                               exit), as the environment says (autoexport:
//	                               OTEL_METRICS_EXPORTER, default otlp), or a
//	                               Prometheus scrape endpoint at -metrics-addr
//	-metrics-addr HOST:PORT        the scrape endpoint's address (/metrics)
//	-pprof HOST:PORT               serve net/http/pprof (/debug/pprof/) there
//
// The resource names the program (service.name, unless OTEL_SERVICE_NAME
// or OTEL_RESOURCE_ATTRIBUTES says otherwise) and ringactor's version.
// Nothing here prints on its own: the stdout exporters write to the
// writer Start is given (autoexport's "console" writes to standard output,
// as that environment variable asks).
package otelsetup

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/pprof"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/contrib/exporters/autoexport"
	promexporter "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/exporters/stdout/stdoutmetric"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/ringactor/ringactor/version"
)

// ErrFlag is a flag value otelsetup does not take.
var ErrFlag = errors.New("otelsetup: bad flag value")

var (
	traceKinds  = []string{"none", "stdout", "otlp"}
	metricKinds = []string{"none", "stdout", "otlp", "prometheus"}
)

// Flags are a program's telemetry flags. A nil *Flags starts nothing.
type Flags struct {
	Trace       string // -trace: none, stdout, otlp
	Metrics     string // -metrics: none, stdout, otlp, prometheus
	MetricsAddr string // -metrics-addr: the Prometheus endpoint's address
	Pprof       string // -pprof: pprof's address, "" for none
	Service     string // service.name: the program
}

// Register adds -trace, -metrics, -metrics-addr and -pprof to fs, for
// the program service.
func Register(fs *flag.FlagSet, service string) *Flags {
	f := &Flags{Service: service}
	fs.StringVar(&f.Trace, "trace", "none", "where sampled messages' spans go: "+strings.Join(traceKinds, ", ")+
		" (otlp: as OTEL_TRACES_EXPORTER and OTEL_EXPORTER_OTLP_* say)")
	fs.StringVar(&f.Metrics, "metrics", "none", "where metrics go: "+strings.Join(metricKinds, ", ")+
		" (otlp: as OTEL_METRICS_EXPORTER and OTEL_EXPORTER_OTLP_* say; prometheus: served at -metrics-addr)")
	fs.StringVar(&f.MetricsAddr, "metrics-addr", "localhost:9464", "address of the Prometheus scrape endpoint (/metrics) with -metrics prometheus")
	fs.StringVar(&f.Pprof, "pprof", "", "serve net/http/pprof (/debug/pprof/) at this address, e.g. localhost:6060")
	return f
}

// Check refuses flag values Start would not take.
func (f *Flags) Check() error {
	if f == nil {
		return nil
	}
	if !slices.Contains(traceKinds, f.Trace) {
		return fmt.Errorf("%w: -trace %q; use one of %s", ErrFlag, f.Trace, strings.Join(traceKinds, ", "))
	}
	if !slices.Contains(metricKinds, f.Metrics) {
		return fmt.Errorf("%w: -metrics %q; use one of %s", ErrFlag, f.Metrics, strings.Join(metricKinds, ", "))
	}
	if f.Metrics == "prometheus" && f.MetricsAddr == "" {
		return fmt.Errorf("%w: -metrics prometheus needs -metrics-addr", ErrFlag)
	}
	return nil
}

// Setup is what Start started: hand its providers to runtime.Config, and
// call Shutdown at exit.
type Setup struct {
	// TracerProvider takes the spans: the SDK's when something exports
	// them, else a no-op one.
	TracerProvider trace.TracerProvider
	// MeterProvider takes the metrics: the SDK's when something reads
	// them, else a no-op one.
	MeterProvider metric.MeterProvider
	// MetricsAddr is the Prometheus endpoint's address (-metrics
	// prometheus), PprofAddr pprof's (-pprof); nil when not served.
	MetricsAddr, PprofAddr net.Addr

	once     sync.Once
	err      error
	flush    []func(context.Context) error
	shutdown []func(context.Context) error // in order
}

// Start makes what f asks for. out is where the stdout exporters write.
// extra are more options for the tracer provider (a span processor of the
// program's own): with any, spans are recorded even under -trace none.
// On error, what was started is stopped.
func (f *Flags) Start(ctx context.Context, out io.Writer, extra ...sdktrace.TracerProviderOption) (*Setup, error) {
	s := &Setup{TracerProvider: tracenoop.NewTracerProvider(), MeterProvider: metricnoop.NewMeterProvider()}
	if f == nil {
		f = &Flags{Trace: "none", Metrics: "none"}
	}
	if err := f.Check(); err != nil {
		return nil, err
	}
	fail := func(err error) (*Setup, error) {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return nil, errors.Join(err, s.Shutdown(sctx))
	}
	res, err := resource.New(ctx, resource.WithAttributes(semconv.ServiceName(f.Service), semconv.ServiceVersion(version.Version)),
		resource.WithFromEnv(), resource.WithTelemetrySDK())
	if err != nil {
		return nil, fmt.Errorf("otelsetup: resource: %w", err)
	}
	if f.Pprof != "" {
		if err := s.servePprof(f.Pprof); err != nil {
			return fail(err)
		}
	}
	exp, err := spanExporter(ctx, f.Trace, out)
	if err != nil {
		return fail(err)
	}
	if exp != nil {
		extra = append([]sdktrace.TracerProviderOption{sdktrace.WithBatcher(exp)}, extra...)
	}
	if len(extra) > 0 {
		tp := sdktrace.NewTracerProvider(append([]sdktrace.TracerProviderOption{sdktrace.WithResource(res)}, extra...)...)
		s.TracerProvider = tp
		s.flush = append(s.flush, tp.ForceFlush)
		s.shutdown = append(s.shutdown, tp.Shutdown)
	}
	reader, err := s.metricReader(ctx, f, out)
	if err != nil {
		return fail(err)
	}
	if reader != nil {
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithResource(res), sdkmetric.WithReader(reader))
		s.MeterProvider = mp
		s.flush = append(s.flush, mp.ForceFlush)
		// Before the servers: the last collection is exported, then the
		// endpoint closes.
		s.shutdown = append([]func(context.Context) error{mp.Shutdown}, s.shutdown...)
	}
	return s, nil
}

// spanExporter is -trace's exporter; nil for none (also when
// OTEL_TRACES_EXPORTER=none under otlp).
func spanExporter(ctx context.Context, kind string, out io.Writer) (sdktrace.SpanExporter, error) {
	switch kind {
	case "stdout":
		exp, err := stdouttrace.New(stdouttrace.WithWriter(out))
		if err != nil {
			return nil, fmt.Errorf("otelsetup: -trace stdout: %w", err)
		}
		return exp, nil
	case "otlp":
		exp, err := autoexport.NewSpanExporter(ctx)
		if err != nil {
			return nil, fmt.Errorf("otelsetup: -trace otlp: %w (check OTEL_TRACES_EXPORTER and OTEL_EXPORTER_OTLP_PROTOCOL)", err)
		}
		if autoexport.IsNoneSpanExporter(exp) {
			return nil, nil
		}
		return exp, nil
	}
	return nil, nil
}

// metricReader is -metrics' reader; nil for none.
func (s *Setup) metricReader(ctx context.Context, f *Flags, out io.Writer) (sdkmetric.Reader, error) {
	switch f.Metrics {
	case "stdout":
		exp, err := stdoutmetric.New(stdoutmetric.WithWriter(out))
		if err != nil {
			return nil, fmt.Errorf("otelsetup: -metrics stdout: %w", err)
		}
		return sdkmetric.NewPeriodicReader(exp), nil
	case "otlp":
		r, err := autoexport.NewMetricReader(ctx)
		if err != nil {
			return nil, fmt.Errorf("otelsetup: -metrics otlp: %w (check OTEL_METRICS_EXPORTER and OTEL_EXPORTER_OTLP_PROTOCOL)", err)
		}
		if autoexport.IsNoneMetricReader(r) {
			return nil, nil
		}
		return r, nil
	case "prometheus":
		reg := prometheus.NewRegistry()
		r, err := promexporter.New(promexporter.WithRegisterer(reg))
		if err != nil {
			return nil, fmt.Errorf("otelsetup: -metrics prometheus: %w", err)
		}
		mux := http.NewServeMux()
		mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
		if s.MetricsAddr, err = s.serve(f.MetricsAddr, mux); err != nil {
			r.Shutdown(ctx)
			return nil, fmt.Errorf("otelsetup: -metrics-addr: %w", err)
		}
		return r, nil
	}
	return nil, nil
}

// servePprof serves net/http/pprof's handlers on a mux of their own.
func (s *Setup) servePprof(addr string) error {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	var err error
	if s.PprofAddr, err = s.serve(addr, mux); err != nil {
		return fmt.Errorf("otelsetup: -pprof: %w", err)
	}
	return nil
}

// serve listens at addr and serves h until Shutdown.
func (s *Setup) serve(addr string, h http.Handler) (net.Addr, error) {
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv.Serve(lis) // returns http.ErrServerClosed at Shutdown
	}()
	s.shutdown = append(s.shutdown, func(ctx context.Context) error {
		err := srv.Shutdown(ctx)
		<-done
		return err
	})
	return lis.Addr(), nil
}

// Flush exports what is buffered and collects and exports the metrics
// now: a program calls it before it closes a pipeline whose metrics it
// wants exported (a closed pipeline's counters report no more).
func (s *Setup) Flush(ctx context.Context) error {
	var errs []error
	for _, f := range s.flush {
		errs = append(errs, f(ctx))
	}
	return errors.Join(errs...)
}

// Shutdown exports what is buffered (spans, the last metrics) and stops
// the providers and servers; later calls return the first's error.
func (s *Setup) Shutdown(ctx context.Context) error {
	s.once.Do(func() {
		var errs []error
		for _, f := range s.shutdown {
			errs = append(errs, f(ctx))
		}
		s.err = errors.Join(errs...)
	})
	return s.err
}
