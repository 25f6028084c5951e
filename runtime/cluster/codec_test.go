package cluster_test

import (
	"bytes"
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/ringactor/ringactor/internal/rttest"
	ra "github.com/ringactor/ringactor/runtime"
	"github.com/ringactor/ringactor/runtime/cluster"
)

// Every test must stop what it starts (this binary also runs the package's
// internal tests).
func TestMain(m *testing.M) { rttest.Main(m) }

// equalMessages compares two decoded messages: floats by bits (NaNs
// included), Data.Context by the span context it carries (remote or not),
// DeadLetter.Err by its text.
func equalMessages(a, b any) bool {
	floats := func(x, y []float32) bool {
		if len(x) != len(y) {
			return false
		}
		for i := range x {
			if math.Float32bits(x[i]) != math.Float32bits(y[i]) {
				return false
			}
		}
		return true
	}
	// The travelling part of a span context: a decoded one is remote.
	// Parent, or the deprecated Context when Parent is not valid.
	sc := func(d ra.Data) trace.SpanContext {
		if d.Parent.IsValid() || d.Context == nil {
			return d.Parent.WithRemote(false)
		}
		return trace.SpanContextFromContext(d.Context).WithRemote(false)
	}
	text := func(err error) string {
		if err == nil {
			return ""
		}
		return err.Error()
	}
	switch x := a.(type) {
	case ra.Data:
		y, ok := b.(ra.Data)
		return ok && x.ID == y.ID && x.Sampled == y.Sampled && floats(x.Floats, y.Floats) && sc(x).Equal(sc(y))
	case ra.Result:
		y, ok := b.(ra.Result)
		return ok && x.ID == y.ID && floats(x.Floats, y.Floats)
	case ra.DeadLetter:
		y, ok := b.(ra.DeadLetter)
		return ok && x.ID == y.ID && x.Stage == y.Stage && x.Device == y.Device && x.Reason == y.Reason && text(x.Err) == text(y.Err)
	}
	return false
}

func mustEncode(t testing.TB, m any) []byte {
	t.Helper()
	b, err := cluster.EncodeMessage(m)
	if err != nil {
		t.Fatalf("encode %+v: %v", m, err)
	}
	return b
}

// sampledContext is a context with a real, sampled span from the SDK.
func sampledContext(t testing.TB) (context.Context, trace.SpanContext) {
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()))
	ctx, span := tp.Tracer("codec-test").Start(context.Background(), "send")
	span.End()
	_ = tp.Shutdown(context.Background())
	return ctx, span.SpanContext()
}

func TestCodecRoundTrip(t *testing.T) {
	ctx, sc := sampledContext(t)
	if !sc.IsSampled() {
		t.Fatal("the SDK did not sample the parent span")
	}
	nan := math.Float32frombits(0x7fc00001)
	msgs := []any{
		ra.Data{ID: 1, Floats: []float32{1, -2.5, float32(math.Inf(1)), nan}, Sampled: true, Parent: sc},
		ra.Data{ID: 2, Sampled: true, Context: ctx}, // the deprecated field still travels
		ra.Data{ID: math.MaxUint64, Floats: make([]float32, 300)},
		ra.Data{},
		ra.Result{ID: 7, Floats: []float32{3, 4}},
		ra.Result{ID: 0},
		ra.DeadLetter{ID: 9, Stage: "sqrt", Device: 2, Reason: ra.ReasonStageError, Err: errors.New("kernels: negative input to sqrt")},
		ra.DeadLetter{ID: 10, Stage: "x", Device: -1, Reason: ra.ReasonPipelineClosed},
	}
	for _, m := range msgs {
		b := mustEncode(t, m)
		got, err := cluster.DecodeMessage(b)
		if err != nil {
			t.Fatalf("decode of %+v: %v", m, err)
		}
		if !equalMessages(m, got) {
			t.Fatalf("round trip of %+v gave %+v", m, got)
		}
	}

	// The sampled parent survives as a remote span context in Parent,
	// sent as Parent or as the deprecated Context.
	for _, m := range msgs[:2] {
		got, _ := cluster.DecodeMessage(mustEncode(t, m))
		d := got.(ra.Data)
		rsc := d.Parent
		if rsc.TraceID() != sc.TraceID() || rsc.SpanID() != sc.SpanID() || !rsc.IsSampled() || !rsc.IsRemote() || d.Context != nil {
			t.Fatalf("traceparent did not survive: sent %v, got %v (Context %v)", sc, rsc, d.Context)
		}
	}
	// No span, no Parent.
	got, _ := cluster.DecodeMessage(mustEncode(t, ra.Data{ID: 3, Context: context.Background()}))
	if d := got.(ra.Data); d.Parent.IsValid() || d.Context != nil {
		t.Fatal("a Data without a span came back with a parent")
	}
	// Pointers encode as their values.
	if b := mustEncode(t, &ra.Result{ID: 5, Floats: []float32{1}}); !bytes.Equal(b, mustEncode(t, ra.Result{ID: 5, Floats: []float32{1}})) {
		t.Fatal("*Result encodes differently from Result")
	}
}

// The wire format is stable: these bytes are version 2 as documented.
func TestCodecWireFormat(t *testing.T) {
	b := mustEncode(t, ra.Result{ID: 7, Floats: []float32{1}})
	want := []byte{0x93, 0x02, 0x02, 0x92, 0x07, 0x91, 0xca, 0x3f, 0x80, 0x00, 0x00}
	if !bytes.Equal(b, want) {
		t.Fatalf("Result{7, [1]} encodes as % x, want % x", b, want)
	}
	// Another msgpack writer's output decodes: float64 elements and wide
	// integer widths are accepted.
	other, err := msgpack.Marshal([]any{uint64(2), int64(3), []any{uint64(4), "s", int32(-1), "stage error", ""}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := cluster.DecodeMessage(other)
	if err != nil || !equalMessages(got, ra.DeadLetter{ID: 4, Stage: "s", Device: -1, Reason: ra.ReasonStageError}) {
		t.Fatalf("msgpack.Marshal'd dead letter: %+v, %v", got, err)
	}
	other, _ = msgpack.Marshal([]any{2, 2, []any{8, []float64{0.5, 2}}})
	got, err = cluster.DecodeMessage(other)
	if err != nil || !equalMessages(got, ra.Result{ID: 8, Floats: []float32{0.5, 2}}) {
		t.Fatalf("msgpack.Marshal'd result: %+v, %v", got, err)
	}
}

// Every kind of garbage is an error wrapping ErrBadMessage that names the
// problem.
func TestCodecBadMessages(t *testing.T) {
	data := mustEncode(t, ra.Data{ID: 1, Floats: []float32{1, 2, 3}, Sampled: true})
	enc := func(v ...any) []byte {
		b, err := msgpack.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	// Result [1, array32 of MaxFloats+1 floats] with nothing after the
	// array's header; then one claiming 4096 floats.
	huge := []byte{0x93, 0x02, 0x02, 0x92, 0x01, 0xdd, 0x00, 0x10, 0x00, 0x01}
	claim := []byte{0x93, 0x02, 0x02, 0x92, 0x01, 0xdd, 0x00, 0x00, 0x10, 0x00}
	// DeadLetter [1, str32 of 4096 bytes holding one; then one of 2 GiB].
	longStr := []byte{0x93, 0x02, 0x03, 0x95, 0x01, 0xdb, 0x00, 0x00, 0x10, 0x00, 'a'}
	hugeStr := []byte{0x93, 0x02, 0x03, 0x95, 0x01, 0xdb, 0x7f, 0xff, 0xff, 0xff}
	cases := []struct {
		name string
		b    []byte
		want string
	}{
		{"empty", nil, "truncated at byte 0"},
		{"truncated", data[:len(data)-3], "truncated"},
		{"truncated header", data[:1], "truncated"},
		{"trailing bytes", append(append([]byte(nil), data...), 0xc0), "1 trailing bytes"},
		{"not an array", []byte{0xa3, 'a', 'b', 'c'}, "envelope at byte 0 is a msgpack string, want an array"},
		{"empty envelope", []byte{0x90}, "empty array"},
		{"unknown version", enc(3, 1, []any{}), "unknown codec version 3 (this decoder knows version 2"},
		{"version 1", enc(1, 1, []any{1, []float32{}, true, ""}), "unknown codec version 1 (this decoder knows version 2"},
		{"negative version", enc(-1, 1, []any{}), "want an unsigned integer"},
		{"envelope fields", enc(2, 1), "envelope has 2 fields"},
		{"unknown kind", enc(2, 9, []any{}), "unknown message kind 9"},
		{"wrong kind", enc(2, 2, []any{1, []float32{1}, true, ""}), "Result body has 4 fields"},
		{"body not array", enc(2, 1, "x"), "Data body at byte 3 is a msgpack string"},
		{"id is a string", enc(2, 2, []any{"7", []float32{}}), "Result id at byte 4 is a msgpack string, want an unsigned integer"},
		{"negative id", enc(2, 2, []any{-7, []float32{}}), "Result id is -7"},
		{"float element", enc(2, 2, []any{7, []any{"xxxxxxx"}}), "Result floats element 0 at byte 6 is a msgpack string, want a float32"},
		{"float count too large", huge, "more than MaxFloats"},
		{"float count past the input", claim, "claims 4096 floats"},
		{"bool", enc(2, 1, []any{1, []float32{}, 1, ""}), "Data sampled at byte 6 is a msgpack fixint, want a bool"},
		{"traceparent", enc(2, 1, []any{1, []float32{}, true, "00-zz"}), "not a valid W3C trace context"},
		{"zero trace id", enc(2, 1, []any{1, []float32{}, true, "00-00000000000000000000000000000000-0000000000000001-01"}), "not a valid W3C trace context"},
		{"string length past the input", longStr, "claims 4096 bytes, 1 left"},
		{"string too long", hugeStr, "more than MaxText"},
		{"device not int", enc(2, 3, []any{1, "s", "d", "r", ""}), "DeadLetter device at byte 7 is a msgpack string, want an integer"},
		{"device too large", enc(2, 3, []any{1, "s", uint64(math.MaxUint64), "r", ""}), "past the largest int"},
		{"map", enc(map[string]any{"version": 2}), "is a msgpack map"},
		{"deep nesting", bytes.Repeat([]byte{0x91}, 1<<16), "want an unsigned integer"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, err := cluster.DecodeMessage(c.b)
			if err == nil {
				t.Fatalf("decoded % x as %+v", c.b, m)
			}
			if !errors.Is(err, cluster.ErrBadMessage) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %q: want ErrBadMessage saying %q", err, c.want)
			}
		})
	}
}

func TestCodecEncodeRefuses(t *testing.T) {
	for _, m := range []any{nil, 42, ra.Stats{}, (*ra.Data)(nil), ra.Data{Floats: make([]float32, cluster.MaxFloats+1)},
		ra.DeadLetter{Err: errors.New(strings.Repeat("x", cluster.MaxText+1))}} {
		if _, err := cluster.EncodeMessage(m); !errors.Is(err, cluster.ErrNotEncodable) {
			t.Fatalf("EncodeMessage(%T): %v, want ErrNotEncodable", m, err)
		}
	}
	// The limit itself encodes and decodes.
	b := mustEncode(t, ra.Result{ID: 1, Floats: make([]float32, cluster.MaxFloats)})
	if m, err := cluster.DecodeMessage(b); err != nil || len(m.(ra.Result).Floats) != cluster.MaxFloats {
		t.Fatalf("MaxFloats floats: %v", err)
	}
}

// FuzzDecodeMessage: no input panics; an error always wraps ErrBadMessage;
// whatever decodes re-encodes, and that decodes to an equal message.
func FuzzDecodeMessage(f *testing.F) {
	ctx, _ := sampledContext(f)
	msgs := []any{
		ra.Data{ID: 1, Floats: []float32{1, 2, 3}, Sampled: true, Parent: trace.SpanContextFromContext(ctx)},
		ra.Data{ID: 1 << 40, Floats: []float32{float32(math.NaN())}},
		ra.Result{ID: 2, Floats: []float32{0.5}},
		ra.DeadLetter{ID: 3, Stage: "sqrt", Device: 1, Reason: ra.ReasonStageError, Err: errors.New("negative")},
	}
	for _, m := range msgs {
		b := mustEncode(f, m)
		f.Add(b)
		f.Add(b[:len(b)/2])
		f.Add(b[:len(b)-1])
		f.Add(append(append([]byte(nil), b...), 0))
		mangled := append([]byte(nil), b...)
		mangled[2] ^= 0x07 // another kind
		f.Add(mangled)
	}
	f.Add([]byte{})
	f.Add([]byte{0x93, 0x02, 0x02, 0x92, 0x07, 0xdd, 0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{0x93, 0x02, 0x01, 0x90})
	f.Add([]byte{0xc1, 0xff, 0x00})
	f.Add(bytes.Repeat([]byte{0x91}, 64))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := cluster.DecodeMessage(b)
		if err != nil {
			if m != nil || !errors.Is(err, cluster.ErrBadMessage) {
				t.Fatalf("decode error %v with message %+v, or not ErrBadMessage", err, m)
			}
			return
		}
		again, err := cluster.EncodeMessage(m)
		if err != nil {
			t.Fatalf("decoded %+v does not re-encode: %v", m, err)
		}
		m2, err := cluster.DecodeMessage(again)
		if err != nil || !equalMessages(m, m2) {
			t.Fatalf("re-encoded %+v decodes as %+v, %v", m, m2, err)
		}
	})
}
