package wire

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"

	ra "github.com/ringactor/ringactor/runtime"
	"github.com/vmihailenco/msgpack/v5"
	"github.com/vmihailenco/msgpack/v5/msgpcode"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// The msgpack codec for the messages that leave the process: a ra.Data sent to
// a remote stage, a ra.Result or ra.DeadLetter delivered to a remote PID or
// written to a file. Inside the process messages never pass through it
// (data goes straight into device queues); it exists so that bytes that
// come from elsewhere are checked before they become a message, and so that
// the format is written down once.
//
// Wire format, version 2 (version 1 had three fields per Batch entry and a
// Closed without its report; batch.go). Every value is MessagePack; every container is an
// array whose positions are fixed (no maps, no optional fields), so the
// format is stable, compact and readable from any msgpack library:
//
//	envelope   [version uint, kind uint, body]            version = 2
//	kind 1     Data:       [id uint, floats, sampled bool, traceparent str]
//	kind 2     Result:     [id uint, floats]
//	kind 3     DeadLetter: [id uint, stage str, device int, reason str, err str]
//	floats     array of float32 (msgpack float32; float64 is accepted and
//	           rounded); nil or an empty array is an empty vector
//
// traceparent is the W3C trace context of Data.Parent (or, when that is
// not valid, of the deprecated Data.Context; "" for no span), written and read by OpenTelemetry's propagation.TraceContext;
// tracestate does not travel. err is DeadLetter.Err's text ("" for nil).
// Unsigned integers may be written in any msgpack integer width (negative
// values are refused); device is any signed width.
//
// A decoder refuses, with an error wrapping ErrBadMessage that says what it
// found and where: an unknown version or kind (naming what it knows), a
// container with the wrong number of fields (there is no skipping of
// unknown fields: a new field is a new version, and skipping arbitrary
// nesting is a stack-depth hazard on hostile input), a wrong type, a
// truncated message, trailing bytes, a float vector longer than MaxFloats
// or than the bytes left could hold (checked before allocating), a string
// longer than MaxText, and a traceparent that is not a valid W3C trace
// context. It never panics, and it allocates no more than the input's size
// in floats and strings.

// Codec limits and format constants.
const (
	// CodecVersion is the envelope version EncodeMessage writes and the
	// only one DecodeMessage reads.
	CodecVersion = 2
	// MaxFloats is the longest float vector a message may carry (4 MiB of
	// float32): a decoder refuses a longer one before allocating it, so a
	// forged count cannot exhaust memory.
	MaxFloats = 1 << 20
	// MaxText is the longest string field (stage name, reason, error text,
	// traceparent) in bytes.
	MaxText = 1 << 20
)

// Message kinds in the envelope.
const (
	KindData       = 1
	KindResult     = 2
	KindDeadLetter = 3
)

// ErrBadMessage: bytes that are not a message this codec wrote. Every
// DecodeMessage error wraps it and says what was wrong.
var ErrBadMessage = errors.New("ringactor: bad encoded message")

// ErrNotEncodable: a value EncodeMessage cannot put on the wire (a type
// that does not travel, or one over the codec's limits).
var ErrNotEncodable = errors.New("ringactor: message cannot be encoded")

// EncodeMessage encodes a ra.Data, ra.Result or ra.DeadLetter (or a non-nil pointer
// to one) for another process, in the format described above. Data.Parent
// (else the deprecated Data.Context) travels as its W3C traceparent only.
func EncodeMessage(m any) ([]byte, error) {
	switch v := m.(type) {
	case *ra.Data:
		if v != nil {
			return EncodeMessage(*v)
		}
	case *ra.Result:
		if v != nil {
			return EncodeMessage(*v)
		}
	case *ra.DeadLetter:
		if v != nil {
			return EncodeMessage(*v)
		}
	case ra.Data:
		tp := Traceparent(v.Context) // the deprecated field, read when Parent is not valid
		if v.Parent.IsValid() {
			tp = TraceparentOf(v.Parent)
		}
		if err := checkEncode(v.Floats, "traceparent", tp); err != nil {
			return nil, err
		}
		w := newWriter(len(v.Floats), len(tp))
		w.envelope(KindData, 4)
		w.e.EncodeUint(v.ID)
		w.floats(v.Floats)
		w.e.EncodeBool(v.Sampled)
		w.e.EncodeString(tp)
		return w.buf.Bytes(), nil
	case ra.Result:
		if err := checkEncode(v.Floats); err != nil {
			return nil, err
		}
		w := newWriter(len(v.Floats), 0)
		w.envelope(KindResult, 2)
		w.e.EncodeUint(v.ID)
		w.floats(v.Floats)
		return w.buf.Bytes(), nil
	case ra.DeadLetter:
		errText := ""
		if v.Err != nil {
			errText = v.Err.Error()
		}
		if err := checkEncode(nil, "stage", v.Stage, "reason", reasonText(v.Reason), "err", errText); err != nil {
			return nil, err
		}
		w := newWriter(0, len(v.Stage)+len(reasonText(v.Reason))+len(errText))
		w.envelope(KindDeadLetter, 5)
		w.e.EncodeUint(v.ID)
		w.e.EncodeString(v.Stage)
		w.e.EncodeInt(int64(v.Device))
		w.e.EncodeString(reasonText(v.Reason))
		w.e.EncodeString(errText)
		return w.buf.Bytes(), nil
	}
	return nil, fmt.Errorf("%w: %T does not travel: only ra.Data, ra.Result and ra.DeadLetter (or non-nil pointers to them) do", ErrNotEncodable, m)
}

// DecodeMessage decodes bytes written by EncodeMessage into a ra.Data, ra.Result
// or ra.DeadLetter value. A Data's Parent is the sender's span context
// (remote) when a traceparent travelled, the zero SpanContext otherwise;
// its Context is nil. Any other input is an error wrapping ErrBadMessage.
func DecodeMessage(b []byte) (any, error) {
	r := newReader(b)
	n, err := r.arrayLen("envelope")
	if err != nil {
		return nil, err
	}
	if n < 1 {
		return nil, r.bad("envelope is an empty array, want [version, kind, body]")
	}
	ver, err := r.uint("envelope version")
	if err != nil {
		return nil, err
	}
	if ver != CodecVersion {
		return nil, r.bad("unknown codec version %d (this decoder knows version %d only): is the sender a newer ringactor?", ver, CodecVersion)
	}
	if n != 3 {
		return nil, r.bad("envelope has %d fields, version %d has 3: [version, kind, body]", n, CodecVersion)
	}
	kind, err := r.uint("envelope kind")
	if err != nil {
		return nil, err
	}
	var m any
	switch kind {
	case KindData:
		m, err = r.data()
	case KindResult:
		m, err = r.result()
	case KindDeadLetter:
		m, err = r.deadLetter()
	default:
		return nil, r.bad("unknown message kind %d (version %d knows 1 ra.Data, 2 ra.Result, 3 ra.DeadLetter)", kind, CodecVersion)
	}
	if err != nil {
		return nil, err
	}
	if left := r.r.Len(); left != 0 {
		return nil, r.bad("%d trailing bytes after the message: is the input several messages, or framed wrongly?", left)
	}
	return m, nil
}

// Traceparent is the W3C traceparent of the span ctx carries, "" when
// it carries none.
func Traceparent(ctx context.Context) string {
	if ctx == nil {
		return ""
	}
	return TraceparentOf(trace.SpanContextFromContext(ctx))
}

// TraceparentOf is sc as a W3C traceparent, "" when sc is not valid.
func TraceparentOf(sc trace.SpanContext) string {
	if !sc.IsValid() {
		return ""
	}
	ctx := trace.ContextWithSpanContext(context.Background(), sc)
	c := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, c)
	return c.Get("traceparent")
}

// checkEncode refuses what a decoder would refuse, so that whatever
// EncodeMessage writes DecodeMessage reads. texts are name, value pairs.
func checkEncode(floats []float32, texts ...string) error {
	if len(floats) > MaxFloats {
		return fmt.Errorf("%w: %d floats, the codec carries at most MaxFloats (%d)", ErrNotEncodable, len(floats), MaxFloats)
	}
	for i := 0; i+1 < len(texts); i += 2 {
		if len(texts[i+1]) > MaxText {
			return fmt.Errorf("%w: %s of %d bytes, the codec carries at most MaxText (%d)", ErrNotEncodable, texts[i], len(texts[i+1]), MaxText)
		}
	}
	return nil
}

// writer encodes into a buffer; writes to a bytes.Buffer cannot fail, so
// the encoder's errors are not checked.
type writer struct {
	buf bytes.Buffer
	e   *msgpack.Encoder
}

func newWriter(floats, text int) *writer {
	w := &writer{}
	w.buf.Grow(32 + 5*floats + text)
	w.e = msgpack.NewEncoder(&w.buf)
	return w
}

func (w *writer) envelope(kind uint64, fields int) {
	w.e.EncodeArrayLen(3)
	w.e.EncodeUint(CodecVersion)
	w.e.EncodeUint(kind)
	w.e.EncodeArrayLen(fields)
}

func (w *writer) floats(v []float32) {
	w.e.EncodeArrayLen(len(v))
	// What EncodeFloat32 writes (0xca, then the bits big-endian), without
	// a call per element: the encoder writes straight into buf.
	b := w.buf.AvailableBuffer()
	for _, x := range v {
		b = binary.BigEndian.AppendUint32(append(b, msgpcode.Float), math.Float32bits(x))
	}
	w.buf.Write(b)
}

// reader decodes from b. The msgpack decoder reads the bytes.Reader
// directly (it is an io.ByteScanner, so there is no read-ahead buffer), so
// the reader's Len is exactly what is left, and strings are sliced from b
// after their length is checked against it.
type reader struct {
	b []byte
	r *bytes.Reader
	d *msgpack.Decoder
}

func newReader(b []byte) *reader {
	r := &reader{b: b, r: bytes.NewReader(b)}
	r.d = msgpack.NewDecoder(r.r)
	return r
}

func (r *reader) off() int { return len(r.b) - r.r.Len() }

func (r *reader) bad(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrBadMessage}, args...)...)
}

// peek returns the next value's msgpack code, or a truncation error naming
// what was expected there.
func (r *reader) peek(what string) (byte, error) {
	c, err := r.d.PeekCode()
	if err != nil {
		return 0, r.truncated(what)
	}
	return c, nil
}

func (r *reader) truncated(what string) error {
	return r.bad("truncated at byte %d of %d, reading %s: check that the whole message was received", r.off(), len(r.b), what)
}

func (r *reader) wrongType(what, want string, c byte) error {
	return r.bad("%s at byte %d is a msgpack %s, want %s", what, r.off(), codeName(c), want)
}

// fail turns an error of the msgpack decoder (after the code was checked,
// only a short read is possible) into a message error.
func (r *reader) fail(what string, err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return r.truncated(what)
	}
	return r.bad("%s at byte %d: %v", what, r.off(), err)
}

func (r *reader) arrayLen(what string) (int, error) {
	c, err := r.peek(what)
	if err != nil {
		return 0, err
	}
	if !msgpcode.IsFixedArray(c) && c != msgpcode.Array16 && c != msgpcode.Array32 {
		return 0, r.wrongType(what, "an array", c)
	}
	n, err := r.d.DecodeArrayLen()
	if err != nil {
		return 0, r.fail(what, err)
	}
	return n, nil
}

// fields reads a body's array header and checks its field count.
func (r *reader) fields(what string, want int) error {
	n, err := r.arrayLen(what + " body")
	if err != nil {
		return err
	}
	if n != want {
		return r.bad("%s body has %d fields, version %d has %d", what, n, CodecVersion, want)
	}
	return nil
}

func isUintCode(c byte) bool {
	return c <= msgpcode.PosFixedNumHigh || (c >= msgpcode.Uint8 && c <= msgpcode.Uint64)
}

func isIntCode(c byte) bool {
	return msgpcode.IsFixedNum(c) || (c >= msgpcode.Uint8 && c <= msgpcode.Int64)
}

func (r *reader) uint(what string) (uint64, error) {
	c, err := r.peek(what)
	if err != nil {
		return 0, err
	}
	if isUintCode(c) {
		v, err := r.d.DecodeUint64()
		if err != nil {
			return 0, r.fail(what, err)
		}
		return v, nil
	}
	if !isIntCode(c) {
		return 0, r.wrongType(what, "an unsigned integer", c)
	}
	v, err := r.d.DecodeInt64()
	if err != nil {
		return 0, r.fail(what, err)
	}
	if v < 0 {
		return 0, r.bad("%s is %d, want an unsigned integer", what, v)
	}
	return uint64(v), nil
}

func (r *reader) int(what string) (int64, error) {
	c, err := r.peek(what)
	if err != nil {
		return 0, err
	}
	if !isIntCode(c) {
		return 0, r.wrongType(what, "an integer", c)
	}
	v, err := r.d.DecodeInt64()
	if err != nil {
		return 0, r.fail(what, err)
	}
	if c == msgpcode.Uint64 && v < 0 {
		return 0, r.bad("%s is %d, past the largest int", what, uint64(v))
	}
	return v, nil
}

func (r *reader) bool(what string) (bool, error) {
	c, err := r.peek(what)
	if err != nil {
		return false, err
	}
	if c != msgpcode.True && c != msgpcode.False {
		return false, r.wrongType(what, "a bool", c)
	}
	v, err := r.d.DecodeBool()
	if err != nil {
		return false, r.fail(what, err)
	}
	return v, nil
}

func (r *reader) string(what string) (string, error) {
	c, err := r.peek(what)
	if err != nil {
		return "", err
	}
	if !msgpcode.IsString(c) {
		return "", r.wrongType(what, "a string", c)
	}
	n, err := r.d.DecodeBytesLen()
	if err != nil {
		return "", r.fail(what, err)
	}
	if n > MaxText {
		return "", r.bad("%s claims %d bytes, more than MaxText (%d)", what, n, MaxText)
	}
	if n > r.r.Len() {
		return "", r.bad("truncated at byte %d of %d: %s claims %d bytes, %d left: check that the whole message was received",
			r.off(), len(r.b), what, n, r.r.Len())
	}
	off := r.off()
	if _, err := r.r.Seek(int64(n), io.SeekCurrent); err != nil {
		return "", r.fail(what, err)
	}
	return string(r.b[off : off+n]), nil
}

// floats reads a float vector, checking its count against MaxFloats and
// against the bytes left (each element takes at least 5) before
// allocating.
func (r *reader) floats(what string) ([]float32, error) {
	c, err := r.peek(what)
	if err != nil {
		return nil, err
	}
	if c == msgpcode.Nil {
		if err := r.d.DecodeNil(); err != nil {
			return nil, r.fail(what, err)
		}
		return []float32{}, nil
	}
	n, err := r.arrayLen(what)
	if err != nil {
		return nil, err
	}
	if n > MaxFloats {
		return nil, r.bad("%s holds %d floats, more than MaxFloats (%d)", what, n, MaxFloats)
	}
	if 5*n > r.r.Len() {
		return nil, r.bad("truncated at byte %d of %d: %s claims %d floats (at least %d bytes), %d left: check that the whole message was received",
			r.off(), len(r.b), what, n, 5*n, r.r.Len())
	}
	v := make([]float32, n)
	// The elements as ringactor writes them (float32s, 5 bytes each) are
	// read straight from b; from the first that is not, the decoder reads.
	rest, i := r.b[r.off():], 0
	for ; i < n && rest[5*i] == msgpcode.Float; i++ {
		v[i] = math.Float32frombits(binary.BigEndian.Uint32(rest[5*i+1:]))
	}
	if _, err := r.r.Seek(int64(5*i), io.SeekCurrent); err != nil {
		return nil, r.fail(what, err)
	}
	for ; i < n; i++ {
		c, err := r.peek(what)
		if err != nil {
			return nil, err
		}
		switch c {
		case msgpcode.Float:
			v[i], err = r.d.DecodeFloat32()
		case msgpcode.Double:
			var d float64
			d, err = r.d.DecodeFloat64()
			v[i] = float32(d)
		default:
			return nil, r.wrongType(fmt.Sprintf("%s element %d", what, i), "a float32", c)
		}
		if err != nil {
			return nil, r.fail(what, err)
		}
	}
	return v, nil
}

func (r *reader) data() (ra.Data, error) {
	var d ra.Data
	err := r.fields("Data", 4)
	if err == nil {
		d.ID, err = r.uint("ra.Data id")
	}
	if err == nil {
		d.Floats, err = r.floats("ra.Data floats")
	}
	if err == nil {
		d.Sampled, err = r.bool("ra.Data sampled")
	}
	var tp string
	if err == nil {
		tp, err = r.string("ra.Data traceparent")
	}
	if err != nil {
		return ra.Data{}, err
	}
	if d.Parent, err = r.parent("ra.Data traceparent", tp); err != nil {
		return ra.Data{}, err
	}
	return d, nil
}

// parent turns a traceparent read as what into its remote span context:
// the zero (invalid) one for "", an error for anything but a valid W3C
// trace context.
func (r *reader) parent(what, tp string) (trace.SpanContext, error) {
	if tp == "" {
		return trace.SpanContext{}, nil
	}
	ctx := propagation.TraceContext{}.Extract(context.Background(), propagation.MapCarrier{"traceparent": tp})
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return trace.SpanContext{}, r.bad("%s %q is not a valid W3C trace context (want 00-<32 hex>-<16 hex>-<2 hex>, ids not all zero)", what, clip(tp))
	}
	return sc, nil
}

func (r *reader) result() (ra.Result, error) {
	var m ra.Result
	err := r.fields("Result", 2)
	if err == nil {
		m.ID, err = r.uint("ra.Result id")
	}
	if err == nil {
		m.Floats, err = r.floats("ra.Result floats")
	}
	if err != nil {
		return ra.Result{}, err
	}
	return m, nil
}

func (r *reader) deadLetter() (ra.DeadLetter, error) {
	var m ra.DeadLetter
	var dev int64
	var errText string
	err := r.fields("DeadLetter", 5)
	if err == nil {
		m.ID, err = r.uint("ra.DeadLetter id")
	}
	if err == nil {
		m.Stage, err = r.string("ra.DeadLetter stage")
	}
	if err == nil {
		dev, err = r.int("ra.DeadLetter device")
	}
	if err == nil && int64(int(dev)) != dev {
		err = r.bad("ra.DeadLetter device %d does not fit an int", dev)
	}
	if err == nil {
		var reason string
		reason, err = r.string("ra.DeadLetter reason")
		if err == nil && reason != "" { // "": the zero Reason
			if m.Reason, err = ra.ParseReason(reason); err != nil {
				err = r.bad("%v", err)
			}
		}
	}
	if err == nil {
		errText, err = r.string("ra.DeadLetter err")
	}
	if err != nil {
		return ra.DeadLetter{}, err
	}
	m.Device = int(dev)
	if errText != "" {
		m.Err = errors.New(errText)
	}
	return m, nil
}

// clip shortens text quoted in an error.
func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}

// codeName names the msgpack type of a code byte, for errors.
func codeName(c byte) string {
	switch {
	case c <= msgpcode.PosFixedNumHigh, c >= msgpcode.NegFixedNumLow:
		return "fixint"
	case msgpcode.IsFixedMap(c), c == msgpcode.Map16, c == msgpcode.Map32:
		return "map"
	case msgpcode.IsFixedArray(c), c == msgpcode.Array16, c == msgpcode.Array32:
		return "array"
	case msgpcode.IsString(c):
		return "string"
	case msgpcode.IsBin(c):
		return "bin"
	case msgpcode.IsExt(c):
		return "ext"
	}
	switch c {
	case msgpcode.Nil:
		return "nil"
	case msgpcode.False, msgpcode.True:
		return "bool"
	case msgpcode.Float:
		return "float32"
	case msgpcode.Double:
		return "float64"
	case msgpcode.Uint8, msgpcode.Uint16, msgpcode.Uint32, msgpcode.Uint64:
		return "uint"
	case msgpcode.Int8, msgpcode.Int16, msgpcode.Int32, msgpcode.Int64:
		return "int"
	}
	return fmt.Sprintf("unused code 0x%02x", c)
}

// reasonText is a reason's name on the wire: "" for the zero Reason.
func reasonText(r ra.Reason) string {
	if !r.Valid() {
		return ""
	}
	return r.String()
}
