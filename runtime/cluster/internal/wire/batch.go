package wire

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/vmihailenco/msgpack/v5"
	"github.com/vmihailenco/msgpack/v5/msgpcode"
	"go.opentelemetry.io/otel/trace"

	"github.com/ringactor/ringactor/p2pqueue"
	ra "github.com/ringactor/ringactor/runtime"
)

// The messages of a cluster pipeline, in the codec's envelope (see
// codec.go) with kinds of their own. protoactor remote sends only protobuf
// messages, so each travels as the bytes of a wrapperspb.BytesValue.
//
//	kind 4  Batch:  [to uint, entries array]   entries: id uint, flags uint, payload bin,
//	                traceparent str, repeated
//	kind 5  Build:  [pipeline str, to uint, next pid, origin pid, stages array]
//	                pid: [address str, id str]; stage: [name, op, params floats, device int,
//	                stateful bool, workers int, slot size int, capacity int, backpressure int]
//	kind 6  Built:  [err str]            "" when the segment runs
//	kind 7  Close:  [drain bool, timeout ns uint]
//	kind 8  Closed: [err str, report]    the segment's report once closed
//	kind 9  Report?: []                  asks a segment for its report
//	kind 10 Report: [report]
//	report: array of stage: [name str, device int, state uint, processed uint, dropped uint,
//	        errors uint, traced uint, queued uint, samples uint,
//	        wait p50, p90, p99 uint ns, service p50, p90, p99 uint ns]
//
// A Batch carries the slots of one egress batch as they are: the payload is
// the slot's little-endian float32 bytes, so neither side converts floats,
// and the payloads are sliced from the received bytes, not copied. to is
// the index of the segment (or, past the last, the sink) the batch is for.
// A sampled message's traceparent is the W3C context of the cluster
// pipeline's root span for it, so every segment's spans join one trace
// under that root; it is "" (one byte) for the others.
//
// A report is what the origin needs to list a remote segment's stages in
// its Stats and Latency: each stage's counters and its sampled latency
// percentiles.
const (
	KindBatch     = 4
	KindBuild     = 5
	KindBuilt     = 6
	KindClose     = 7
	KindClosed    = 8
	KindReportReq = 9
	KindReport    = 10
)

// Entry is one message of a Batch. Payload aliases the decoded bytes.
type Entry struct {
	ID      uint64
	Flags   p2pqueue.Flags
	Payload []byte
	// Trace is the traceparent of the cluster pipeline's root span of a
	// sampled message ("" for the others), and Parent its span context.
	Trace  string
	Parent trace.SpanContext
}

// BatchWriter encodes Batches into one reused buffer: nothing is allocated
// per message, and one slice per batch (the bytes handed to remote, which
// serialises them later on its own goroutine).
type BatchWriter struct {
	buf bytes.Buffer
	e   *msgpack.Encoder
}

func NewBatchWriter() *BatchWriter {
	w := &BatchWriter{}
	w.e = msgpack.NewEncoder(&w.buf)
	return w
}

func (w *BatchWriter) Begin(to, n int) {
	w.buf.Reset()
	w.e.EncodeArrayLen(3)
	w.e.EncodeUint(CodecVersion)
	w.e.EncodeUint(KindBatch)
	w.e.EncodeArrayLen(2)
	w.e.EncodeUint(uint64(to))
	w.e.EncodeArrayLen(batchFields * n)
}

// batchFields is the number of fields of one Batch entry.
const batchFields = 4

func (w *BatchWriter) Add(id uint64, flags p2pqueue.Flags, payload []byte, trace string) {
	w.e.EncodeUint(id)
	w.e.EncodeUint(uint64(flags))
	if payload == nil {
		payload = []byte{} // an empty bin: the encoder writes nil for a nil slice
	}
	w.e.EncodeBytes(payload)
	w.e.EncodeString(trace)
}

// bytes returns a copy of the encoded batch.
func (w *BatchWriter) Bytes() []byte { return bytes.Clone(w.buf.Bytes()) }

// EntryAt returns the i-th message of a batch being sent, with the
// traceparent of its root if it is traced.
type EntryAt func(i int) (id uint64, flags p2pqueue.Flags, payload []byte, trace string)

// Transport limits. protoactor remote sends the messages queued for one
// node together, up to EndpointWriterBatch of them in one gRPC message,
// and gRPC refuses (and so ends the stream, which ends the link to that
// node) a message over its receive limit, 4 MiB unless configured. So:
//
//   - a Batch holds at most MaxBatchPayload bytes of payloads, unless it
//     holds one message alone (split: a batch is cut into Batches under
//     that bound, in order);
//   - one message carries at most MaxPayload bytes (MaxFloats float32s, the
//     codec's limit): a larger one is dead-lettered at its sender with
//     reason "Oversize payload" and never sent;
//   - so no remote message is over MaxRemoteMessage, and no gRPC message
//     over EndpointWriterBatch of them; every node raises gRPC's limits,
//     receiving and sending, to MaxTransportMessage, above that (Join).
//
// Every node of a cluster must run with these limits: a node with gRPC's
// default 4 MiB limit ends the link when a message of more than about 4 MiB
// (or several smaller ones sent together) reaches it.
const (
	MaxPayload          = 4 * MaxFloats
	MaxBatchPayload     = 1 << 20
	MaxRemoteMessage    = MaxPayload + 64<<10 // one message, its entry and the Batch's header
	EndpointWriterBatch = 64
	MaxTransportMessage = EndpointWriterBatch*(MaxRemoteMessage+64<<10) + 1<<20 // + protoactor's envelope and lookup tables
)

// split encodes the entries idx names (indices for at), in order, into
// Batches for segment to, each under MaxBatchPayload bytes of payloads
// unless it holds one message alone, and hands each to send. Every payload
// must be at most MaxPayload bytes (the sender refuses larger ones).
func (w *BatchWriter) Split(to int, idx []int, at EntryAt, send func([]byte)) {
	for len(idx) > 0 {
		k, size := 0, 0
		for ; k < len(idx); k++ {
			_, _, p, _ := at(idx[k])
			if k > 0 && size+len(p) > MaxBatchPayload {
				break
			}
			size += len(p)
		}
		w.Begin(to, k)
		for _, i := range idx[:k] {
			w.Add(at(i))
		}
		send(w.Bytes())
		idx = idx[k:]
	}
}

// Oversize is the error of a message too large to leave its node.
func Oversize(id uint64, bytes int) error {
	return fmt.Errorf("%w: message %d carries %d floats, a message to another node at most MaxFloats (%d): split it, or keep the stages it passes on one node",
		ErrNotEncodable, id, bytes/4, MaxFloats)
}

// BatchReader decodes Batches, reusing its entries between calls.
type BatchReader struct {
	entries []Entry
}

// decode parses b (which must outlive the entries) and returns the target
// index and the entries, or an error wrapping ErrBadMessage.
func (br *BatchReader) Decode(b []byte) (to int, entries []Entry, err error) {
	r := newReader(b)
	if err := r.envelopeOf(KindBatch, "Batch"); err != nil {
		return 0, nil, err
	}
	if err := r.fields("Batch", 2); err != nil {
		return 0, nil, err
	}
	t, err := r.uint("Batch to")
	if err != nil {
		return 0, nil, err
	}
	if t > 1<<16 {
		return 0, nil, r.bad("Batch to %d: no pipeline has that many segments", t)
	}
	n, err := r.arrayLen("Batch entries")
	if err != nil {
		return 0, nil, err
	}
	if n%batchFields != 0 {
		return 0, nil, r.bad("Batch has %d entry fields, want a multiple of %d (id, flags, payload, traceparent)", n, batchFields)
	}
	if n > r.r.Len() { // each field takes at least one byte
		return 0, nil, r.truncated("Batch entries")
	}
	br.entries = br.entries[:0]
	for range n / batchFields {
		var e Entry
		if e.ID, err = r.uint("Batch id"); err != nil {
			return 0, nil, err
		}
		f, err := r.uint("Batch flags")
		if err != nil {
			return 0, nil, err
		}
		if f > 1<<32-1 {
			return 0, nil, r.bad("Batch flags %#x do not fit 32 bits", f)
		}
		e.Flags = p2pqueue.Flags(f)
		if e.Payload, err = r.bin("Batch payload"); err != nil {
			return 0, nil, err
		}
		if len(e.Payload) > MaxPayload {
			return 0, nil, r.bad("Batch payload of message %d is %d bytes, more than MaxFloats (%d) float32s", e.ID, len(e.Payload), MaxFloats)
		}
		if len(e.Payload)%4 != 0 {
			return 0, nil, r.bad("Batch payload of message %d is %d bytes, not whole float32s", e.ID, len(e.Payload))
		}
		if e.Trace, err = r.string("Batch traceparent"); err != nil {
			return 0, nil, err
		}
		if e.Parent, err = r.parent("Batch traceparent", e.Trace); err != nil {
			return 0, nil, err
		}
		br.entries = append(br.entries, e)
	}
	if left := r.r.Len(); left != 0 {
		return 0, nil, r.bad("%d trailing bytes after the Batch", left)
	}
	return int(t), br.entries, nil
}

// envelopeOf reads an envelope header and checks it holds the given kind.
func (r *reader) envelopeOf(kind uint64, what string) error {
	k, err := r.envelopeKind()
	if err == nil && k != kind {
		err = r.bad("message kind %d where a %s (kind %d) was expected", k, what, kind)
	}
	return err
}

// envelopeKind reads an envelope header and returns its kind.
func (r *reader) envelopeKind() (uint64, error) {
	n, err := r.arrayLen("envelope")
	if err != nil {
		return 0, err
	}
	if n != 3 {
		return 0, r.bad("envelope has %d fields, want 3: [version, kind, body]", n)
	}
	ver, err := r.uint("envelope version")
	if err != nil {
		return 0, err
	}
	if ver != CodecVersion {
		return 0, r.bad("unknown codec version %d (this decoder knows version %d only): is the sender a newer ringactor?", ver, CodecVersion)
	}
	return r.uint("envelope kind")
}

// bin reads a bin (or str) value as a slice of the input, after checking
// its length against what is left.
func (r *reader) bin(what string) ([]byte, error) {
	c, err := r.peek(what)
	if err != nil {
		return nil, err
	}
	if !msgpcode.IsBin(c) && !msgpcode.IsString(c) {
		return nil, r.wrongType(what, "bin", c)
	}
	n, err := r.d.DecodeBytesLen()
	if err != nil {
		return nil, r.fail(what, err)
	}
	if n < 0 || n > r.r.Len() {
		return nil, r.bad("truncated at byte %d of %d: %s claims %d bytes, %d left", r.off(), len(r.b), what, n, r.r.Len())
	}
	off := r.off()
	if _, err := r.r.Seek(int64(n), io.SeekCurrent); err != nil {
		return nil, r.fail(what, err)
	}
	return r.b[off : off+n : off+n], nil
}

// KindOf reads the kind of an envelope without decoding its body.
func KindOf(b []byte) (uint64, error) { return newReader(b).envelopeKind() }

// PIDRef is a PID on the wire.
type PIDRef struct{ Address, ID string }

// BuildMsg asks a node to run a segment of a pipeline.
type BuildMsg struct {
	Pipeline string
	To       int // this segment's index in the pipeline
	Next     PIDRef
	Origin   PIDRef
	Stages   []ra.StageSpec
}

func EncodeBuild(m BuildMsg) ([]byte, error) {
	w := newWriter(0, 256)
	w.envelope(KindBuild, 5)
	w.e.EncodeString(m.Pipeline)
	w.e.EncodeUint(uint64(m.To))
	for _, p := range []PIDRef{m.Next, m.Origin} {
		w.e.EncodeArrayLen(2)
		w.e.EncodeString(p.Address)
		w.e.EncodeString(p.ID)
	}
	w.e.EncodeArrayLen(len(m.Stages))
	for _, s := range m.Stages {
		if err := checkEncode(s.Params, "stage name", s.Name, "op", s.Op); err != nil {
			return nil, err
		}
		w.e.EncodeArrayLen(9)
		w.e.EncodeString(s.Name)
		w.e.EncodeString(s.Op)
		w.floats(s.Params)
		w.e.EncodeInt(int64(s.Device))
		w.e.EncodeBool(s.Stateful)
		w.e.EncodeInt(int64(s.Workers))
		w.e.EncodeInt(int64(s.SlotSize))
		w.e.EncodeInt(int64(s.Capacity))
		w.e.EncodeInt(int64(s.Backpressure))
	}
	return w.buf.Bytes(), nil
}

// MaxStages bounds a Build's stage count before anything is allocated.
const MaxStages = 1024

func DecodeBuild(b []byte) (BuildMsg, error) {
	var m BuildMsg
	r := newReader(b)
	if err := r.envelopeOf(KindBuild, "Build"); err != nil {
		return m, err
	}
	if err := r.fields("Build", 5); err != nil {
		return m, err
	}
	var err error
	if m.Pipeline, err = r.string("Build pipeline"); err != nil {
		return m, err
	}
	to, err := r.uint("Build to")
	if err != nil {
		return m, err
	}
	if to > MaxStages {
		return m, r.bad("Build to %d: past any pipeline's segments", to)
	}
	m.To = int(to)
	for _, p := range []*PIDRef{&m.Next, &m.Origin} {
		if err := r.fields("Build pid", 2); err != nil {
			return m, err
		}
		if p.Address, err = r.string("pid address"); err != nil {
			return m, err
		}
		if p.ID, err = r.string("pid id"); err != nil {
			return m, err
		}
	}
	n, err := r.arrayLen("Build stages")
	if err != nil {
		return m, err
	}
	if n > MaxStages {
		return m, r.bad("Build names %d stages, at most %d", n, MaxStages)
	}
	for range n {
		var s ra.StageSpec
		if err := r.fields("Build stage", 9); err != nil {
			return m, err
		}
		if s.Name, err = r.string("stage name"); err != nil {
			return m, err
		}
		if s.Op, err = r.string("stage op"); err != nil {
			return m, err
		}
		if s.Params, err = r.floats("stage params"); err != nil {
			return m, err
		}
		ints := []*int{&s.Device, nil, &s.Workers, &s.SlotSize, &s.Capacity, nil}
		for i, dst := range ints {
			switch i {
			case 1:
				if s.Stateful, err = r.bool("stage stateful"); err != nil {
					return m, err
				}
				continue
			case 5:
				v, err := r.int("stage backpressure")
				if err != nil {
					return m, err
				}
				s.Backpressure = ra.Backpressure(v)
				continue
			}
			v, err := r.int("stage field")
			if err != nil {
				return m, err
			}
			if int64(int32(v)) != v {
				return m, r.bad("stage %q field %d is %d, out of range", s.Name, i, v)
			}
			*dst = int(v)
		}
		m.Stages = append(m.Stages, s)
	}
	if left := r.r.Len(); left != 0 {
		return m, r.bad("%d trailing bytes after the Build", left)
	}
	return m, nil
}

// EncodeText writes a one-string message (Built, Closed).
func EncodeText(kind uint64, text string) []byte {
	w := newWriter(0, len(text))
	w.envelope(kind, 1)
	w.e.EncodeString(FitText(text, MaxText))
	return w.buf.Bytes()
}

// FitText is text as a message carries it (an error's text, a stage's
// name): whole when it fits in limit bytes (MaxText on the wire: readers
// refuse a longer string), else cut at the last word boundary that leaves
// room for a mark saying how much was cut, " … (1234 bytes left out)"; a
// single word longer than the room is cut between runes. limit must leave
// room for the mark (MaxText does).
func FitText(text string, limit int) string {
	if len(text) <= limit {
		return text
	}
	mark := func(left int) string { return fmt.Sprintf(" … (%d bytes left out)", left) }
	// At most len(text) bytes are left out, so this mark is the longest.
	room := max(limit-len(mark(len(text))), 0)
	cut := room
	for cut > 0 && !utf8.RuneStart(text[cut]) {
		cut--
	}
	head := text[:cut]
	if r, _ := utf8.DecodeRuneInString(text[cut:]); !unicode.IsSpace(r) { // cut inside a word: back to its start
		if i := strings.LastIndexFunc(head, unicode.IsSpace); i >= 0 {
			head = text[:i]
		}
	}
	head = strings.TrimRightFunc(head, unicode.IsSpace)
	if head == "" { // nothing but one long word in the room
		head = text[:cut]
	}
	return head + mark(len(text)-len(head))
}

func DecodeText(b []byte, kind uint64, what string) (string, error) {
	r := newReader(b)
	if err := r.envelopeOf(kind, what); err != nil {
		return "", err
	}
	if err := r.fields(what, 1); err != nil {
		return "", err
	}
	s, err := r.string(what + " text")
	if err == nil && r.r.Len() != 0 {
		err = r.bad("%d trailing bytes after the %s", r.r.Len(), what)
	}
	return s, err
}

// CloseMsg asks a segment to close.
type CloseMsg struct {
	Drain   bool
	Timeout uint64 // ns
}

func EncodeClose(m CloseMsg) []byte {
	w := newWriter(0, 0)
	w.envelope(KindClose, 2)
	w.e.EncodeBool(m.Drain)
	w.e.EncodeUint(m.Timeout)
	return w.buf.Bytes()
}

func DecodeClose(b []byte) (CloseMsg, error) {
	var m CloseMsg
	r := newReader(b)
	err := r.envelopeOf(KindClose, "Close")
	if err == nil {
		err = r.fields("Close", 2)
	}
	if err == nil {
		m.Drain, err = r.bool("Close drain")
	}
	if err == nil {
		m.Timeout, err = r.uint("Close timeout")
	}
	if err == nil && r.r.Len() != 0 {
		err = r.bad("%d trailing bytes after the Close", r.r.Len())
	}
	return m, err
}

// RemoteError turns a Built/Closed text into an error.
func RemoteError(text string) error {
	if text == "" {
		return nil
	}
	return fmt.Errorf("ringactor: remote: %s", text)
}
