package rttest

import (
	"context"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/ringactor/ringactor/version"
)

// ours says whether an instrumentation scope is ringactor's.
func ours(scope string) bool { return strings.HasPrefix(scope, "github.com/ringactor/ringactor/") }

// schemaPrefix is how the semantic conventions' schema URLs begin.
const schemaPrefix = "https://opentelemetry.io/schemas/"

// MessagingSpans fails t unless spans hold a span of ringactor's
// instrumentation scopes and every such span carries OpenTelemetry's
// messaging attributes (docs/ARCHITECTURE.md §5): messaging.system
// "ringactor", messaging.operation.type and messaging.operation.name,
// messaging.destination.name, and messaging.message.id as a string; and
// its scope names ringactor's version and a schema URL. It returns how
// many spans it checked.
func MessagingSpans(t testing.TB, spans []sdktrace.ReadOnlySpan) int {
	t.Helper()
	n := 0
	for _, s := range spans {
		sc := s.InstrumentationScope()
		if !ours(sc.Name) {
			continue
		}
		n++
		if sc.Version != version.Version || !strings.HasPrefix(sc.SchemaURL, schemaPrefix) {
			t.Errorf("span %q: scope %q version %q schema %q; want version %q and a semantic-conventions schema URL", s.Name(), sc.Name, sc.Version, sc.SchemaURL, version.Version)
		}
		a := map[attribute.Key]attribute.Value{}
		for _, kv := range s.Attributes() {
			a[kv.Key] = kv.Value
		}
		if v := a["messaging.system"]; v.AsString() != "ringactor" {
			t.Errorf("span %q: messaging.system %q, want ringactor", s.Name(), v.Emit())
		}
		for _, k := range []attribute.Key{"messaging.operation.type", "messaging.operation.name", "messaging.destination.name", "messaging.message.id"} {
			if v, ok := a[k]; !ok || v.Type() != attribute.STRING || v.AsString() == "" {
				t.Errorf("span %q: %s is %v (%v); want a non-empty string", s.Name(), k, v.Emit(), v.Type())
			}
		}
		if op, dest := a["messaging.operation.name"].AsString(), a["messaging.destination.name"].AsString(); s.Name() != op+" "+dest {
			t.Errorf("span %q: want the name {operation} {destination}, %q", s.Name(), op+" "+dest)
		}
	}
	if n == 0 {
		t.Errorf("no span of ringactor's among %d", len(spans))
	}
	return n
}

// MetricUnits collects r and fails t unless it holds a metric of
// ringactor's instrumentation scopes and every such metric has a unit
// and a description, and its scope names ringactor's version and a
// schema URL. It returns the names of the metrics it checked.
func MetricUnits(t testing.TB, r sdkmetric.Reader) []string {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, sm := range rm.ScopeMetrics {
		if !ours(sm.Scope.Name) {
			continue
		}
		if sm.Scope.Version != version.Version || !strings.HasPrefix(sm.Scope.SchemaURL, schemaPrefix) {
			t.Errorf("meter %q: version %q schema %q; want version %q and a semantic-conventions schema URL", sm.Scope.Name, sm.Scope.Version, sm.Scope.SchemaURL, version.Version)
		}
		for _, m := range sm.Metrics {
			names = append(names, m.Name)
			if m.Unit == "" || m.Description == "" {
				t.Errorf("metric %s: unit %q, description %q; want both", m.Name, m.Unit, m.Description)
			}
		}
	}
	if len(names) == 0 {
		t.Errorf("no metric of ringactor's among %d scopes", len(rm.ScopeMetrics))
	}
	return names
}
