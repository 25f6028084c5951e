package spans

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	rk "github.com/ringactor/ringactor/ringkernel"
)

var t0 = time.Unix(1_700_000_000, 0)

func at(us int) time.Time { return t0.Add(time.Duration(us) * time.Microsecond) }

func newTracer(stages ...Stage) (*Tracer, *tracetest.SpanRecorder) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	return New(tp.Tracer("test"), "p", stages), rec
}

func attrs(s sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
	out := map[attribute.Key]attribute.Value{}
	for _, a := range s.Attributes() {
		out[a.Key] = a.Value
	}
	return out
}

func ended(rec *tracetest.SpanRecorder, name string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.Name() == name {
			out = append(out, s)
		}
	}
	return out
}

// A message through two stages: a root span under the sender's, a child
// per stage with the documented names, kinds, attributes and the
// kernels' times; the root ends at its last copy's end.
func TestLinearMessage(t *testing.T) {
	tr, rec := newTracer(Stage{Name: "a", Device: 0, Fanout: 1}, Stage{Name: "b", Device: 2, Fanout: 1})
	parentCtx, parent := sdktrace.NewTracerProvider().Tracer("sender").Start(context.Background(), "send")
	tr.Begin(parentCtx, 7, at(0))
	tr.Record(1, rk.TraceRecord{ID: 7, From: 0, Enqueued: at(1), Dequeued: at(3), Done: at(10)})
	tr.Record(2, rk.TraceRecord{ID: 7, From: 1, Enqueued: at(10), Dequeued: at(12), Done: at(20)})
	if len(ended(rec, "send p")) != 0 {
		t.Fatal("the root ended before the message's end")
	}
	tr.End(7, 2, at(25), nil)
	roots := ended(rec, "send p")
	if len(roots) != 1 {
		t.Fatalf("%d roots", len(roots))
	}
	root := roots[0]
	ra := attrs(root)
	if root.SpanKind() != trace.SpanKindProducer || !root.StartTime().Equal(at(0)) || !root.EndTime().Equal(at(25)) ||
		root.Parent().SpanID() != parent.SpanContext().SpanID() || ra["messaging.message.id"].AsString() != "7" ||
		ra["ringactor.pipeline"].AsString() != "p" || root.Status().Code == codes.Error {
		t.Fatalf("root: kind %v, %v to %v, parent %v, attributes %v, status %v", root.SpanKind(), root.StartTime(), root.EndTime(), root.Parent(), ra, root.Status())
	}
	b := ended(rec, "process p/b")
	if len(ended(rec, "process p/a")) != 1 || len(b) != 1 {
		t.Fatalf("stage spans: %d a, %d b", len(ended(rec, "process p/a")), len(b))
	}
	ba := attrs(b[0])
	if b[0].SpanKind() != trace.SpanKindConsumer || b[0].Parent().SpanID() != root.SpanContext().SpanID() ||
		!b[0].StartTime().Equal(at(10)) || !b[0].EndTime().Equal(at(20)) ||
		ba["ringactor.stage"].AsString() != "b" || ba["ringactor.device"].AsInt64() != 2 || ba["messaging.message.id"].AsString() != "7" ||
		ba["ringactor.queue_wait_ns"].AsInt64() != 2000 || ba["ringactor.service_ns"].AsInt64() != 8000 {
		t.Fatalf("stage b: kind %v, parent %v, %v to %v, attributes %v", b[0].SpanKind(), b[0].Parent(), b[0].StartTime(), b[0].EndTime(), ba)
	}
}

// The end may arrive before the records (the egress pump beats the record
// pumps); the root ends with the last event, at the latest stage end when
// that is later than the copy's (clocks differ). A record without an
// enqueue time starts at dequeue.
func TestEndBeforeRecords(t *testing.T) {
	tr, rec := newTracer(Stage{Name: "a", Fanout: 1}, Stage{Name: "b", Fanout: 1})
	tr.Begin(nil, 1, at(0))
	tr.End(1, 2, at(15), nil)
	tr.Record(2, rk.TraceRecord{ID: 1, From: 1, Enqueued: at(10), Dequeued: at(11), Done: at(18)})
	if len(ended(rec, "send p")) != 0 {
		t.Fatal("the root ended before stage a's record")
	}
	tr.Record(1, rk.TraceRecord{ID: 1, From: 0, Dequeued: at(2), Done: at(9)})
	roots := ended(rec, "send p")
	if len(roots) != 1 || !roots[0].EndTime().Equal(at(18)) {
		t.Fatalf("roots %d, want one ending at the last stage span's end", len(roots))
	}
	if a := ended(rec, "process p/a"); len(a) != 1 || !a[0].StartTime().Equal(at(2)) {
		t.Fatalf("stage a: %v", a)
	}
}

// A RouteAll stage's copies share the root, which ends with the second
// copy; the first copy to die gives it its error status and reason.
func TestCopiesAndDeath(t *testing.T) {
	tr, rec := newTracer(Stage{Name: "fan", Fanout: 2}, Stage{Name: "x", Fanout: 1}, Stage{Name: "y", Fanout: 1})
	tr.Begin(context.Background(), 3, at(0))
	tr.Record(1, rk.TraceRecord{ID: 3, From: 0, Enqueued: at(0), Dequeued: at(1), Done: at(2)})
	tr.Record(2, rk.TraceRecord{ID: 3, From: 1, Enqueued: at(2), Dequeued: at(3), Done: at(4)})
	tr.End(3, 2, at(5), nil)
	if len(ended(rec, "send p")) != 0 {
		t.Fatal("the root ended with one copy still out")
	}
	tr.End(3, 1, at(6), &Death{Stage: "y", Reason: "mailbox full"})
	tr.End(3, 1, at(7), &Death{Stage: "z", Reason: "later"}) // a stray: the trace is gone
	roots := ended(rec, "send p")
	if len(roots) != 1 {
		t.Fatalf("%d roots", len(roots))
	}
	r := roots[0]
	if r.Status().Code != codes.Error || r.Status().Description != `dead-lettered at stage "y": mailbox full` ||
		attrs(r)["ringactor.dead_letter.reason"].AsString() != "mailbox full" || !r.EndTime().Equal(at(6)) {
		t.Fatalf("root: status %v, attributes %v, end %v", r.Status(), attrs(r), r.EndTime())
	}
}

// Records of messages not begun here make no span; Close ends the traces
// still open as dead with the reason it is given, and keeps a death seen
// before.
func TestUntracedAndClose(t *testing.T) {
	tr, rec := newTracer(Stage{Name: "a", Fanout: 1})
	tr.Record(1, rk.TraceRecord{ID: 99, Done: at(1)})
	tr.Begin(nil, 1, at(0))
	tr.Begin(nil, 2, at(0))
	tr.End(2, 0, time.Time{}, &Death{Stage: "a", Reason: "stage faulted"}) // no end time: the root stays open
	tr.Close(Death{Reason: "pipeline closed"})
	if len(rec.Ended()) != 2 || len(ended(rec, "process p/a")) != 0 {
		t.Fatalf("%d spans ended", len(rec.Ended()))
	}
	for _, r := range rec.Ended() {
		want := map[string]string{"1": "pipeline closed", "2": "stage faulted"}[attrs(r)["messaging.message.id"].AsString()]
		if r.Status().Code != codes.Error || attrs(r)["ringactor.dead_letter.reason"].AsString() != want {
			t.Errorf("root %v: status %v, attributes %v; want reason %q", attrs(r)["messaging.message.id"], r.Status(), attrs(r), want)
		}
	}
	tr.Close(Death{Reason: "again"})
	if len(rec.Ended()) != 2 {
		t.Fatal("a second Close ended more")
	}
}

// Every span follows OpenTelemetry's messaging conventions: the root
// sends the message to the pipeline, each stage's span processes it at
// the stage's mailbox, the message id is a decimal string (not a cast
// int64: an id above 2^63 keeps its value), and a dead copy's root has
// error.type.
func TestMessagingConventions(t *testing.T) {
	tr, rec := newTracer(Stage{Name: "a", Fanout: 1}, Stage{Name: "b", Fanout: 1})
	const big = uint64(1)<<63 + 5
	tr.Begin(nil, big, at(0))
	tr.Record(1, rk.TraceRecord{ID: big, From: 0, Enqueued: at(1), Dequeued: at(2), Done: at(3)})
	tr.Record(2, rk.TraceRecord{ID: big, From: 1, Enqueued: at(3), Dequeued: at(4), Done: at(5)})
	tr.End(big, 2, at(6), &Death{Stage: "b", Reason: "stage error"})
	want := map[string]struct {
		kind          trace.SpanKind
		typ, op, dest string
	}{
		"send p":      {trace.SpanKindProducer, "send", "send", "p"},
		"process p/a": {trace.SpanKindConsumer, "process", "process", "p/a"},
		"process p/b": {trace.SpanKindConsumer, "process", "process", "p/b"},
	}
	if len(rec.Ended()) != len(want) {
		t.Fatalf("%d spans ended, want %d", len(rec.Ended()), len(want))
	}
	for _, s := range rec.Ended() {
		w, ok := want[s.Name()]
		a := attrs(s)
		if !ok || s.SpanKind() != w.kind || a["messaging.system"].AsString() != "ringactor" ||
			a["messaging.operation.type"].AsString() != w.typ || a["messaging.operation.name"].AsString() != w.op ||
			a["messaging.destination.name"].AsString() != w.dest ||
			a["messaging.message.id"].Type() != attribute.STRING || a["messaging.message.id"].AsString() != "9223372036854775813" {
			t.Errorf("span %q (kind %v): attributes %v; want %+v", s.Name(), s.SpanKind(), a, w)
		}
		if _, old := a["ringactor.message.id"]; old {
			t.Errorf("span %q still has ringactor.message.id", s.Name())
		}
		if s.SpanKind() == trace.SpanKindProducer && a["error.type"].AsString() != "stage error" {
			t.Errorf("dead root's error.type %v", a["error.type"])
		}
	}
}
