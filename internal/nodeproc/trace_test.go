package nodeproc_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/ringactor/ringactor/internal/nodeproc"
	"github.com/ringactor/ringactor/internal/rttest"
	ra "github.com/ringactor/ringactor/runtime"
	"github.com/ringactor/ringactor/runtime/cluster"
)

// traceRuns names each run's pipeline apart, so -count=N never mixes runs'
// spans.
var traceRuns atomic.Int64

// span is what the test needs of a span, from either process.
type span struct {
	name            string
	trace, id, up   string // trace id, span id, parent span id ("" for a root)
	start, end      time.Time
	pipeline, stage string
	node            string // "a" (this process) or "b"
}

// fileSpan is a span as the stdout exporter writes it.
type fileSpan struct {
	Name        string
	SpanContext struct{ TraceID, SpanID string }
	Parent      struct{ TraceID, SpanID string }
	StartTime   time.Time
	EndTime     time.Time
	Attributes  []struct {
		Key   string
		Value struct{ Value any }
	}
}

// readSpans reads the spans node b wrote to path.
func readSpans(t *testing.T, path string) []span {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []span
	dec := json.NewDecoder(f)
	for {
		var fs fileSpan
		if err := dec.Decode(&fs); errors.Is(err, io.EOF) {
			return out
		} else if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		s := span{name: fs.Name, trace: fs.SpanContext.TraceID, id: fs.SpanContext.SpanID, start: fs.StartTime, end: fs.EndTime, node: "b"}
		if fs.Parent.SpanID != "0000000000000000" {
			s.up = fs.Parent.SpanID
		}
		for _, a := range fs.Attributes {
			v, _ := a.Value.Value.(string)
			switch a.Key {
			case "ringactor.pipeline":
				s.pipeline = v
			case "ringactor.stage":
				s.stage = v
			}
		}
		out = append(out, s)
	}
}

// originSpans are this process's recorded spans.
func originSpans() []span {
	var out []span
	for _, r := range spans.Ended() {
		s := span{name: r.Name(), trace: r.SpanContext().TraceID().String(), id: r.SpanContext().SpanID().String(),
			start: r.StartTime(), end: r.EndTime(), node: "a"}
		if r.Parent().IsValid() {
			s.up = r.Parent().SpanID().String()
		}
		for _, a := range r.Attributes() {
			switch a.Key {
			case attribute.Key("ringactor.pipeline"):
				s.pipeline = a.Value.AsString()
			case attribute.Key("ringactor.stage"):
				s.stage = a.Value.AsString()
			}
		}
		out = append(out, s)
	}
	return out
}

// TestRemoteOneTraceAcrossProcesses: a sampled message of a cluster pipeline
// whose middle stage runs in another process is one trace: a root span at
// the origin, and under it every segment's spans, from both processes,
// each stage span within the root. The origin's Latency and Stats list
// the remote stage too, with its counts.
func TestRemoteOneTraceAcrossProcesses(t *testing.T) {
	file := filepath.Join(t.TempDir(), "b-spans.json")
	startBWith(t, nodeproc.Config{TraceFile: file})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	l := newLedger(t)
	name := fmt.Sprintf("trace-guide-%d", traceRuns.Add(1))
	spec := guide(name)
	spec.SampleRatio = 0.25 // ids 4, 8, ..., 40
	spec.Deliver = ra.Sink{Func: l.result}
	spec.OnDeadLetter = l.dead
	cp, err := origin.Build(ctx, spec, cluster.Options{})
	if err != nil {
		t.Fatal(err)
	}
	const n = 40
	if _, err := cp.SendBatch(ctx, batchOf(1, n, 4)); err != nil {
		t.Fatal(err)
	}
	if err := cp.Close(ctx, true); err != nil {
		t.Fatal(err)
	}
	if delivered, _ := l.count(); delivered != n {
		t.Fatalf("%d of %d delivered: %v", delivered, n, l.reasons)
	}

	// The origin lists every stage, the remote one from its node's report.
	lat, st := cp.Latency(), cp.Stats()
	if len(lat) != 3 || len(st.Stages) != 3 {
		t.Fatalf("Latency %+v and Stats %+v: want the 3 stages", lat, st.Stages)
	}
	for i, want := range []string{"x2", "sqrt", "plus1"} {
		node := ""
		if want == "sqrt" {
			node = "b"
		}
		if lat[i].Stage != want || lat[i].Node != node || lat[i].Samples != n/4 || st.Stages[i].Stage != want || st.Stages[i].Node != node || st.Stages[i].Processed != n {
			t.Errorf("stage %d: latency %+v, stats %s on %q processed %d; want %s on %q, %d sampled of %d", i, lat[i], st.Stages[i].Stage, st.Stages[i].Node, st.Stages[i].Processed, want, node, n/4, n)
		}
	}
	if lat[1].Service.P50 <= 0 {
		t.Errorf("the remote stage's latency came without times: %+v", lat[1])
	}

	// Every span of this process, the cluster's roots and its segments'
	// spans, follows the messaging conventions.
	rttest.MessagingSpans(t, spans.Ended())
	// One trace per sampled message, rooted here.
	all := append(originSpans(), readSpans(t, file)...)
	roots := map[string]span{} // by trace id
	for _, s := range all {
		if s.node == "a" && s.up == "" && s.pipeline == name && s.name == "send "+name {
			if _, dup := roots[s.trace]; dup {
				t.Errorf("two roots in trace %s", s.trace)
			}
			roots[s.trace] = s
		}
	}
	if len(roots) != n/4 {
		t.Fatalf("%d root spans of pipeline %s, want one per sampled message (%d)", len(roots), name, n/4)
	}
	byID := map[string]span{}
	for _, s := range all {
		if _, ok := roots[s.trace]; ok {
			byID[s.id] = s
		}
	}
	for tr, root := range roots {
		stages := map[string]string{} // stage: node
		for _, s := range byID {
			if s.trace != tr {
				continue
			}
			// Parentage: every span's chain of parents reaches the root.
			at, hops := s, 0
			for at.id != root.id && hops < 10 {
				up, ok := byID[at.up]
				if !ok {
					t.Fatalf("trace %s: span %q on node %s has parent %s, which is no span of the trace", tr, s.name, s.node, at.up)
				}
				at, hops = up, hops+1
			}
			if at.id != root.id {
				t.Fatalf("trace %s: span %q does not lead to the root", tr, s.name)
			}
			if s.stage == "" {
				continue
			}
			if _, dup := stages[s.stage]; dup {
				t.Errorf("trace %s: stage %s twice", tr, s.stage)
			}
			stages[s.stage] = s.node
			if s.start.Before(root.start) || s.end.After(root.end) {
				t.Errorf("trace %s: stage span %s [%v, %v] outside the root [%v, %v]", tr, s.stage, s.start, s.end, root.start, root.end)
			}
		}
		if want := map[string]string{"x2": "a", "sqrt": "b", "plus1": "a"}; fmt.Sprint(stages) != fmt.Sprint(want) {
			t.Errorf("trace %s: stage spans from %v, want %v (one trace over both processes)", tr, stages, want)
		}
	}
}
