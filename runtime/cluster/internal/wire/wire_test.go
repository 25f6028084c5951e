package wire

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/ringactor/ringactor/p2pqueue"
	ra "github.com/ringactor/ringactor/runtime"
)

// rawMsgpack writes whatever f encodes, for hand-made (and malformed)
// messages.
func rawMsgpack(f func(e *msgpack.Encoder)) []byte {
	var buf bytes.Buffer
	f(msgpack.NewEncoder(&buf))
	return buf.Bytes()
}

// batchBytes encodes entries as a Batch for segment to.
func batchBytes(to int, es []Entry) []byte {
	w := NewBatchWriter()
	w.Begin(to, len(es))
	for _, e := range es {
		w.Add(e.ID, e.Flags, e.Payload, e.Trace)
	}
	return w.Bytes()
}

// seqBytes is n bytes counting up from start.
func seqBytes(n int, start byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = start + byte(i)
	}
	return b
}

// copyEntries copies decoded entries out of the reader's reused slice and
// out of the input they alias.
func copyEntries(es []Entry) []Entry {
	out := make([]Entry, len(es))
	for i, e := range es {
		out[i] = Entry{ID: e.ID, Flags: e.Flags, Payload: bytes.Clone(e.Payload), Trace: e.Trace}
	}
	return out
}

// aliases reports whether p is a slice of b.
func aliases(b, p []byte) bool {
	for i := range b {
		if &b[i] == &p[0] {
			return i+len(p) <= len(b)
		}
	}
	return false
}

func checkEntries(t *testing.T, what string, got, want []Entry) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d entries, want %d", what, len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.ID != w.ID || g.Flags != w.Flags || !bytes.Equal(g.Payload, w.Payload) || g.Trace != w.Trace {
			t.Fatalf("%s: entry %d is {%d %#x %x %q}, want {%d %#x %x %q}", what, i, g.ID, g.Flags, g.Payload, g.Trace, w.ID, w.Flags, w.Payload, w.Trace)
		}
		if sc := g.Parent; (g.Trace != "") != sc.IsValid() || g.Trace != "" && sc.TraceID().String() != g.Trace[3:35] {
			t.Fatalf("%s: entry %d with traceparent %q has parent %v", what, i, g.Trace, sc)
		}
		if g.Payload == nil {
			t.Fatalf("%s: entry %d has a nil payload, want an empty slice of the input", what, i)
		}
	}
}

func checkBad(t *testing.T, what string, err error, want string) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: decoded without error", what)
	}
	if !errors.Is(err, ErrBadMessage) {
		t.Fatalf("%s: error %v does not wrap ErrBadMessage", what, err)
	}
	if want != "" && !strings.Contains(err.Error(), want) {
		t.Fatalf("%s: error %q does not say %q", what, err, want)
	}
}

func TestWireBatchRoundTrip(t *testing.T) {
	want := []Entry{
		{ID: 0, Flags: 0, Payload: []byte{}},
		{ID: math.MaxUint64, Flags: p2pqueue.FlagSampled, Payload: seqBytes(4, 1), Trace: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"},
		{ID: 1 << 40, Flags: p2pqueue.FlagSampled | 1<<31, Payload: seqBytes(64, 10)},
		{ID: 7, Flags: math.MaxUint32, Payload: seqBytes(4, 200)},
		{ID: 300, Flags: 0, Payload: seqBytes(64, 100)},
	}
	b := batchBytes(3, want)

	var br BatchReader
	to, got, err := br.Decode(b)
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	if to != 3 {
		t.Fatalf("to = %d, want 3", to)
	}
	checkEntries(t, "first decode", got, want)

	// The payloads are slices of the input, not copies.
	for i, e := range got {
		if len(e.Payload) == 0 {
			continue
		}
		if cap(e.Payload) != len(e.Payload) {
			t.Fatalf("entry %d payload has cap %d past its length %d: an append would overwrite the next field", i, cap(e.Payload), len(e.Payload))
		}
		if !aliases(b, e.Payload) {
			t.Fatalf("entry %d payload does not alias the input", i)
		}
	}
	got[2].Payload[0] = 0xEE // writes through to b
	if !bytes.Contains(b, append([]byte{0xEE}, want[2].Payload[1:]...)) {
		t.Fatalf("a write to a decoded payload did not reach the input")
	}
	b2 := bytes.Clone(b)
	b2[bytes.Index(b2, want[1].Payload)] ^= 0xFF
	_, got2, err := br.Decode(b2)
	if err != nil {
		t.Fatalf("decode of the mutated batch: %v", err)
	}
	if got2[1].Payload[0] != want[1].Payload[0]^0xFF {
		t.Fatalf("mutated input byte not seen in the payload: %x", got2[1].Payload)
	}
	b2[bytes.Index(b2, want[4].Payload)] = 0x42 // after decoding: the payload follows
	if got2[4].Payload[0] != 0x42 {
		t.Fatalf("payload does not alias the input: %x after the input changed", got2[4].Payload)
	}

	// A second batch with the same reader: fewer entries, reused storage.
	want3 := []Entry{
		{ID: 99, Flags: p2pqueue.FlagSampled, Payload: seqBytes(64, 7)},
		{ID: math.MaxUint64 - 1, Payload: seqBytes(4, 9)},
	}
	to, got3, err := br.Decode(batchBytes(1<<16, want3))
	if err != nil {
		t.Fatalf("second decode: %v", err)
	}
	if to != 1<<16 {
		t.Fatalf("second decode: to = %d, want %d", to, 1<<16)
	}
	checkEntries(t, "second decode", got3, want3)
	if &got3[0] != &got[0] {
		t.Fatalf("the reader did not reuse its entries")
	}

	// An empty batch.
	to, got4, err := br.Decode(batchBytes(0, nil))
	if err != nil || to != 0 || len(got4) != 0 {
		t.Fatalf("empty batch: to %d, %d entries, %v", to, len(got4), err)
	}
}

// Entries of few bytes each: small ids with no payload or one float. Each
// field takes at least one byte, and these take fewer than three.
func TestWireBatchSmallEntries(t *testing.T) {
	cases := map[string][]Entry{
		"one float, id 1":     {{ID: 1, Payload: seqBytes(4, 1)}},
		"empty payload, id 1": {{ID: 1, Payload: []byte{}}},
		"ten one-float messages": func() []Entry {
			es := make([]Entry, 10)
			for i := range es {
				es[i] = Entry{ID: uint64(i + 1), Payload: seqBytes(4, byte(i))}
			}
			return es
		}(),
		"empty payloads, ids up to 2^32": {{ID: 0, Payload: []byte{}}, {ID: 1 << 31, Flags: p2pqueue.FlagSampled, Payload: []byte{}}},
	}
	for name, want := range cases {
		t.Run(name, func(t *testing.T) {
			var br BatchReader
			to, got, err := br.Decode(batchBytes(2, want))
			if err != nil {
				t.Fatalf("a batch BatchWriter wrote does not decode: %v", err)
			}
			if to != 2 {
				t.Fatalf("to = %d, want 2", to)
			}
			checkEntries(t, name, got, want)
		})
	}
}

func TestWireBatchRejectsGarbage(t *testing.T) {
	big := uint64(math.MaxUint64) // a 9-byte id, so that short entries still pass the size check
	valid := batchBytes(2, []Entry{
		{ID: 5, Flags: p2pqueue.FlagSampled, Payload: seqBytes(8, 1)},
		{ID: big, Payload: seqBytes(4, 50)},
		{ID: 1 << 20, Payload: seqBytes(12, 90)},
	})
	var br BatchReader
	if _, _, err := br.Decode(valid); err != nil {
		t.Fatalf("the valid batch: %v", err)
	}

	for n := range len(valid) {
		_, es, err := br.Decode(valid[:n])
		checkBad(t, fmt.Sprintf("prefix of %d of %d bytes", n, len(valid)), err, "")
		if es != nil {
			t.Fatalf("prefix of %d bytes: entries %v with the error", n, es)
		}
	}

	build, err := EncodeBuild(BuildMsg{Pipeline: "p", Stages: []ra.StageSpec{{Name: "a", Op: "scale", Params: []float32{2}}}})
	if err != nil {
		t.Fatal(err)
	}
	// envelope writes [version, kind, [to, entries...]] by hand.
	envelope := func(ver, kind uint64, body func(e *msgpack.Encoder)) []byte {
		return rawMsgpack(func(e *msgpack.Encoder) {
			e.EncodeArrayLen(3)
			e.EncodeUint(ver)
			e.EncodeUint(kind)
			body(e)
		})
	}
	batch := func(to uint64, fields int, body func(e *msgpack.Encoder)) []byte {
		return envelope(CodecVersion, KindBatch, func(e *msgpack.Encoder) {
			e.EncodeArrayLen(2)
			e.EncodeUint(to)
			e.EncodeArrayLen(fields)
			body(e)
		})
	}
	cases := []struct {
		name string
		b    []byte
		want string
	}{
		{"empty", nil, "truncated"},
		{"empty slice", []byte{}, "truncated"},
		{"not an array", []byte{0x05}, "want an array"},
		{"nil", []byte{0xc0}, "want an array"},
		{"a Build", build, "kind 5"},
		{"Built", EncodeText(KindBuilt, ""), "kind 6"},
		{"Close", EncodeClose(CloseMsg{Drain: true}), "kind 7"},
		{"wrong version", envelope(1, KindBatch, func(e *msgpack.Encoder) {
			e.EncodeArrayLen(2)
			e.EncodeUint(1)
			e.EncodeArrayLen(0)
		}), "version 1"},
		{"envelope of 2 fields", rawMsgpack(func(e *msgpack.Encoder) {
			e.EncodeArrayLen(2)
			e.EncodeUint(CodecVersion)
			e.EncodeUint(KindBatch)
		}), "envelope has 2 fields"},
		{"body of 3 fields", envelope(CodecVersion, KindBatch, func(e *msgpack.Encoder) {
			e.EncodeArrayLen(3)
			e.EncodeUint(1)
			e.EncodeArrayLen(0)
			e.EncodeUint(1)
		}), "3 fields"},
		{"negative to", envelope(CodecVersion, KindBatch, func(e *msgpack.Encoder) {
			e.EncodeArrayLen(2)
			e.EncodeInt(-1)
			e.EncodeArrayLen(0)
		}), "unsigned"},
		{"to past any pipeline", batch(1<<16+1, 0, func(*msgpack.Encoder) {}), "segments"},
		{"entries not an array", envelope(CodecVersion, KindBatch, func(e *msgpack.Encoder) {
			e.EncodeArrayLen(2)
			e.EncodeUint(1)
			e.EncodeBytes([]byte{1, 2, 3, 4})
		}), "want an array"},
		{"2 entry fields", batch(1, 2, func(e *msgpack.Encoder) {
			e.EncodeUint(big)
			e.EncodeUint(0)
		}), "multiple of 4"},
		{"3 entry fields (version 1)", batch(1, 3, func(e *msgpack.Encoder) {
			e.EncodeUint(big)
			e.EncodeUint(0)
			e.EncodeBytes(seqBytes(4, 0))
		}), "multiple of 4"},
		{"5 entry fields", batch(1, 5, func(e *msgpack.Encoder) {
			e.EncodeUint(big)
			e.EncodeUint(0)
			e.EncodeBytes(seqBytes(4, 0))
			e.EncodeString("")
			e.EncodeUint(big)
		}), "multiple of 4"},
		{"traceparent not W3C", batch(1, 4, func(e *msgpack.Encoder) {
			e.EncodeUint(big)
			e.EncodeUint(uint64(p2pqueue.FlagSampled))
			e.EncodeBytes(seqBytes(4, 0))
			e.EncodeString("00-00000000000000000000000000000000-00f067aa0ba902b7-01")
		}), "not a valid W3C trace context"},
		{"traceparent a number", batch(1, 4, func(e *msgpack.Encoder) {
			e.EncodeUint(big)
			e.EncodeUint(0)
			e.EncodeBytes(seqBytes(4, 0))
			e.EncodeUint(big)
		}), "want a string"},
		{"payload of 3 bytes", batch(1, 4, func(e *msgpack.Encoder) {
			e.EncodeUint(big)
			e.EncodeUint(0)
			e.EncodeBytes(seqBytes(3, 0))
		}), "whole float32s"},
		{"payload of 65 bytes", batch(1, 4, func(e *msgpack.Encoder) {
			e.EncodeUint(big)
			e.EncodeUint(0)
			e.EncodeBytes(seqBytes(65, 0))
		}), "whole float32s"},
		{"flags of 33 bits", batch(1, 4, func(e *msgpack.Encoder) {
			e.EncodeUint(big)
			e.EncodeUint(1 << 32)
			e.EncodeBytes(seqBytes(4, 0))
		}), "32 bits"},
		{"negative id", batch(1, 4, func(e *msgpack.Encoder) {
			e.EncodeInt(-5)
			e.EncodeUint(big)
			e.EncodeBytes(seqBytes(4, 0))
		}), "unsigned"},
		{"id a string", batch(1, 4, func(e *msgpack.Encoder) {
			e.EncodeString("123456789")
			e.EncodeUint(0)
			e.EncodeBytes(seqBytes(4, 0))
		}), "unsigned integer"},
		{"payload an array", batch(1, 4, func(e *msgpack.Encoder) {
			e.EncodeUint(big)
			e.EncodeUint(0)
			e.EncodeArrayLen(1)
			e.EncodeFloat32(1)
		}), "want bin"},
		{"payload nil", batch(1, 4, func(e *msgpack.Encoder) {
			e.EncodeUint(big)
			e.EncodeUint(0)
			e.EncodeNil()
		}), "want bin"},
		{"trailing byte", append(bytes.Clone(valid), 0x00), "trailing"},
		{"two batches", append(bytes.Clone(valid), valid...), "trailing"},
		{"forged entry count", rawMsgpack(func(e *msgpack.Encoder) {
			e.EncodeArrayLen(3)
			e.EncodeUint(CodecVersion)
			e.EncodeUint(KindBatch)
			e.EncodeArrayLen(2)
			e.EncodeUint(1)
			e.EncodeArrayLen(3 * (1 << 28)) // 805 million fields in a few bytes
			e.EncodeUint(1)
		}), "truncated"},
		{"forged max entry count", append(rawMsgpack(func(e *msgpack.Encoder) {
			e.EncodeArrayLen(3)
			e.EncodeUint(CodecVersion)
			e.EncodeUint(KindBatch)
			e.EncodeArrayLen(2)
			e.EncodeUint(1)
		}), 0xdd, 0xff, 0xff, 0xff, 0xfc), ""}, // array32 of 2^32-4 fields
		{"forged payload length", append(batch(1, 4, func(e *msgpack.Encoder) {
			e.EncodeUint(big)
			e.EncodeUint(0)
		}), 0xc6, 0x7f, 0xff, 0xff, 0xfc, 1, 2, 3, 4), "claims"}, // bin32 of 2 GiB
		{"forged max payload length", append(batch(1, 4, func(e *msgpack.Encoder) {
			e.EncodeUint(big)
			e.EncodeUint(0)
		}), 0xc6, 0xff, 0xff, 0xff, 0xfc, 1, 2, 3, 4), ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var br BatchReader
			to, es, err := br.Decode(c.b)
			checkBad(t, c.name, err, c.want)
			if to != 0 || es != nil {
				t.Fatalf("to %d and entries %v with the error", to, es)
			}
		})
	}
}

func TestWireBuildRoundTrip(t *testing.T) {
	want := BuildMsg{
		Pipeline: "pipe-ü",
		To:       3,
		Next:     PIDRef{Address: "10.0.0.2:8090", ID: "pipe/seg-4"},
		Origin:   PIDRef{Address: "10.0.0.1:8090", ID: "origin$12"},
		Stages: []ra.StageSpec{
			{Name: "scale", Op: "scale", Params: []float32{2.5, -1, float32(math.Inf(1))}, Device: 1,
				Stateful: true, Workers: 4, SlotSize: 512, Capacity: 2048, Backpressure: ra.Reject},
			{Name: "sum", Op: "prefix_sum", Params: []float32{0}, Device: math.MaxInt32,
				Stateful: false, Workers: -1, SlotSize: 256, Capacity: 1 << 20, Backpressure: ra.Block},
		},
	}
	b, err := EncodeBuild(want)
	if err != nil {
		t.Fatalf("encode: %v", err)
	}
	got, err := DecodeBuild(b)
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", got, want)
	}
	if k, err := KindOf(b); err != nil || k != KindBuild {
		t.Fatalf("KindOf = %d, %v; want %d", k, err, KindBuild)
	}

	// No stages, empty strings.
	empty := BuildMsg{}
	b0, err := EncodeBuild(empty)
	if err != nil {
		t.Fatal(err)
	}
	got0, err := DecodeBuild(b0)
	if err != nil || !reflect.DeepEqual(got0, empty) {
		t.Fatalf("empty Build: %+v, %v", got0, err)
	}

	for n := range len(b) {
		m, err := DecodeBuild(b[:n])
		checkBad(t, fmt.Sprintf("prefix of %d of %d bytes", n, len(b)), err, "")
		_ = m
	}
	checkBad(t, "trailing byte", func() error { _, err := DecodeBuild(append(bytes.Clone(b), 0)); return err }(), "trailing")
	checkBad(t, "a Batch", func() error { _, err := DecodeBuild(batchBytes(1, nil)); return err }(), "kind 4")

	// Ints past int32 are refused, in any of the checked fields.
	for _, mut := range []func(s *ra.StageSpec){
		func(s *ra.StageSpec) { s.Device = 1 << 31 },
		func(s *ra.StageSpec) { s.Device = -1<<31 - 1 },
		func(s *ra.StageSpec) { s.Workers = 1 << 40 },
		func(s *ra.StageSpec) { s.SlotSize = math.MaxInt64 },
		func(s *ra.StageSpec) { s.Capacity = math.MinInt64 },
	} {
		m := want
		m.Stages = append([]ra.StageSpec(nil), want.Stages...)
		mut(&m.Stages[1])
		b, err := EncodeBuild(m)
		if err != nil {
			t.Fatal(err)
		}
		_, err = DecodeBuild(b)
		checkBad(t, fmt.Sprintf("stage %+v", m.Stages[1]), err, "out of range")
	}

	// A forged stage count and to are refused before anything is read.
	forged := func(to uint64, stages int) []byte {
		return rawMsgpack(func(e *msgpack.Encoder) {
			e.EncodeArrayLen(3)
			e.EncodeUint(CodecVersion)
			e.EncodeUint(KindBuild)
			e.EncodeArrayLen(5)
			e.EncodeString("p")
			e.EncodeUint(to)
			for range 2 {
				e.EncodeArrayLen(2)
				e.EncodeString("a")
				e.EncodeString("b")
			}
			e.EncodeArrayLen(stages)
		})
	}
	_, err = DecodeBuild(forged(0, 1<<30))
	checkBad(t, "forged stage count", err, "stages")
	_, err = DecodeBuild(forged(MaxStages+1, 0))
	checkBad(t, "forged to", err, "past")

	// Params over MaxFloats cannot be encoded.
	m := want
	m.Stages = []ra.StageSpec{{Name: "x", Params: make([]float32, MaxFloats+1)}}
	if _, err := EncodeBuild(m); !errors.Is(err, ErrNotEncodable) {
		t.Fatalf("MaxFloats+1 params: %v, want ErrNotEncodable", err)
	}
}

// FitText keeps a text that fits whole; one that does not is cut at a word
// (never inside one, nor inside a rune) and marked with the bytes left out.
func TestFitText(t *testing.T) {
	for _, c := range []struct {
		text  string
		limit int
		want  string
	}{
		{"stage x failed", 14, "stage x failed"},
		{"", 0, ""},
		{"the remote stage could not start its kernel", 43, "the remote stage could not start its kernel"},
		// the mark takes 24 bytes here, so 14 are left for text: "stage" would be cut
		{"the remote stage could not start its kernel", 38, "the remote … (33 bytes left out)"},
		{"the remote stage could not start its kernel", 40, "the remote stage … (27 bytes left out)"}, // the cut falls on a space
		{"dévïcé ünknöwn: ïd 7 döës nöt éxïst", 40, "dévïcé … (37 bytes left out)"},
		// one word longer than the room: cut between runes
		{"abcdefghijklmnopqrstuvwxyz0123456789", 35, "abcdefghijk … (25 bytes left out)"},
		{"ééééééééééééééééééééééééééééééé", 37, "éééééé … (50 bytes left out)"},
		{"      abcdefghijklmnopqrstuvwxyz0123456789", 36, "      abcdef … (30 bytes left out)"},
	} {
		got := FitText(c.text, c.limit)
		if got != c.want {
			t.Errorf("FitText(%q, %d) = %q, want %q", c.text, c.limit, got, c.want)
		}
		if !utf8.ValidString(got) || (len(c.text) > c.limit && len(got) > c.limit) {
			t.Errorf("FitText(%q, %d) = %q: %d bytes, valid UTF-8 %v", c.text, c.limit, got, len(got), utf8.ValidString(got))
		}
	}
}

func TestWireTextAndClose(t *testing.T) {
	for _, kind := range []uint64{KindBuilt, KindClosed} {
		for _, text := range []string{"", "stage \"x\": no such op", "ünïcode ✓"} {
			b := EncodeText(kind, text)
			got, err := DecodeText(b, kind, "Text")
			if err != nil || got != text {
				t.Fatalf("kind %d %q: got %q, %v", kind, text, got, err)
			}
			if k, err := KindOf(b); err != nil || k != kind {
				t.Fatalf("KindOf(kind %d) = %d, %v", kind, k, err)
			}
			other := uint64(KindBuilt)
			if kind == KindBuilt {
				other = KindClosed
			}
			_, err = DecodeText(b, other, "Other")
			checkBad(t, fmt.Sprintf("kind %d read as %d", kind, other), err, fmt.Sprintf("kind %d", kind))
			for n := range len(b) {
				_, err := DecodeText(b[:n], kind, "Text")
				checkBad(t, fmt.Sprintf("kind %d prefix %d", kind, n), err, "")
			}
			_, err = DecodeText(append(bytes.Clone(b), 0xc0), kind, "Text")
			checkBad(t, "text with a trailing byte", err, "trailing")
		}
	}
	// A long error text travels whole, as does a long stage name in a report.
	long := `ringactor: bad pipeline "guide": stage "sqrt" on device 7: ` + strings.Repeat("the device's ring could not be allocated; ", 8)
	got, err := DecodeText(EncodeText(KindBuilt, long), KindBuilt, "Built")
	if err != nil || got != long {
		t.Fatalf("long text: %q, %v", got, err)
	}
	longStage := strings.Repeat("stage-", 40)
	text, rep, err := DecodeClosed(EncodeClosed(long, []ReportStage{{Stats: ra.StageStats{Stage: longStage}}}))
	if err != nil || text != long || len(rep) != 1 || rep[0].Stats.Stage != longStage {
		t.Fatalf("Closed with long texts: %q, %+v, %v", text, rep, err)
	}
	// One over MaxText is cut at a word, marked with what was left out.
	huge := "ringactor: remote failure: " + strings.Repeat("wörd ", MaxText/6+100)
	got, err = DecodeText(EncodeText(KindClosed, huge), KindClosed, "Closed")
	head, left, ok := strings.Cut(got, " … (")
	if err != nil || len(got) > MaxText || !ok || !strings.HasPrefix(huge, head) || !strings.HasSuffix(head, "wörd") ||
		left != fmt.Sprintf("%d bytes left out)", len(huge)-len(head)) {
		t.Fatalf("text over MaxText: %d bytes, %q ... %q, %v", len(got), got[:min(len(got), 60)], got[max(len(got)-60, 0):], err)
	}

	for _, m := range []CloseMsg{{}, {Drain: true, Timeout: 1}, {Drain: false, Timeout: math.MaxUint64}, {Drain: true, Timeout: 30e9}} {
		b := EncodeClose(m)
		got, err := DecodeClose(b)
		if err != nil || got != m {
			t.Fatalf("Close %+v: got %+v, %v", m, got, err)
		}
		if k, err := KindOf(b); err != nil || k != KindClose {
			t.Fatalf("KindOf(Close) = %d, %v", k, err)
		}
		for n := range len(b) {
			_, err := DecodeClose(b[:n])
			checkBad(t, fmt.Sprintf("Close prefix %d", n), err, "")
		}
		_, err = DecodeClose(append(bytes.Clone(b), 1))
		checkBad(t, "Close with a trailing byte", err, "trailing")
		_, err = DecodeText(b, KindClosed, "Closed")
		checkBad(t, "Close read as Closed", err, "kind 7")
	}
	_, err = DecodeClose(EncodeText(KindClosed, "x"))
	checkBad(t, "Closed read as Close", err, "kind 8")

	if err := RemoteError(""); err != nil {
		t.Fatalf("RemoteError(\"\") = %v", err)
	}
	if err := RemoteError("no device 3"); err == nil || !strings.Contains(err.Error(), "no device 3") {
		t.Fatalf("RemoteError = %v", err)
	}

	// KindOf on every message, and on garbage.
	build, err := EncodeBuild(BuildMsg{Pipeline: "p"})
	if err != nil {
		t.Fatal(err)
	}
	data, err := EncodeMessage(ra.Data{ID: 1, Floats: []float32{1}})
	if err != nil {
		t.Fatal(err)
	}
	dl, err := EncodeMessage(ra.DeadLetter{ID: 1, Stage: "s", Reason: 0})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		b    []byte
		kind uint64
	}{
		{batchBytes(1, []Entry{{ID: 1 << 40, Payload: seqBytes(4, 0)}}), KindBatch},
		{build, KindBuild},
		{EncodeText(KindBuilt, "e"), KindBuilt},
		{EncodeClose(CloseMsg{Drain: true}), KindClose},
		{EncodeClosed("", nil), KindClosed},
		{EncodeReportReq(), KindReportReq},
		{EncodeReport(nil), KindReport},
		{data, KindData},
		{dl, KindDeadLetter},
	} {
		if k, err := KindOf(c.b); err != nil || k != c.kind {
			t.Fatalf("KindOf = %d, %v; want %d", k, err, c.kind)
		}
	}
	for _, b := range [][]byte{
		nil,
		{0x93},
		{0x93, 0x01},
		{0x92, 0x01, 0x04},
		{0x93, 0x03, 0x04, 0x90}, // version 3
		{0x93, 0x01, 0x04, 0x90}, // version 1
		{0x93, 0x02, 0xff, 0x90}, // kind -1
		{0x93, 0x02, 0xa1, 'x', 0x90},
		{0x05},
		{0xc1},
	} {
		if k, err := KindOf(b); err == nil || !errors.Is(err, ErrBadMessage) {
			t.Fatalf("KindOf(%x) = %d, %v; want ErrBadMessage", b, k, err)
		}
	}
}

// FuzzDecodeBatch: no input panics; an error wraps ErrBadMessage; a batch
// that decodes re-encodes (with BatchWriter, in its shortest form) into one
// that decodes to the same target and entries.
func FuzzDecodeBatch(f *testing.F) {
	valid := batchBytes(2, []Entry{
		{ID: 5, Flags: p2pqueue.FlagSampled, Payload: seqBytes(8, 1), Trace: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"},
		{ID: math.MaxUint64, Payload: seqBytes(4, 50)},
		{ID: 1 << 20, Flags: math.MaxUint32, Payload: seqBytes(64, 90)},
	})
	f.Add(valid)
	f.Add(batchBytes(0, nil))
	f.Add(batchBytes(1<<16, []Entry{{ID: 1 << 33, Payload: []byte{}}}))
	f.Add(valid[:len(valid)/2])
	f.Add(valid[:len(valid)-1])
	f.Add(append(bytes.Clone(valid), 0))
	mangled := bytes.Clone(valid)
	mangled[2] = KindBuild
	f.Add(mangled)
	f.Add([]byte{})
	f.Add([]byte{0x93, 0x02, 0x04, 0x92, 0x01, 0xdd, 0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{0x93, 0x02, 0x04, 0x92, 0x01, 0x94, 0xcf, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x00, 0xc6, 0x7f, 0xff, 0xff, 0xff})
	f.Add([]byte{0x93, 0x02, 0x04, 0x92, 0x01, 0x90})
	f.Fuzz(func(t *testing.T, b []byte) {
		var br BatchReader
		to, es, err := br.Decode(b)
		if err != nil {
			if !errors.Is(err, ErrBadMessage) || es != nil {
				t.Fatalf("error %v (entries %v) does not wrap ErrBadMessage", err, es)
			}
			return
		}
		first := copyEntries(es)
		again := batchBytes(to, first)
		var br2 BatchReader
		to2, es2, err := br2.Decode(again)
		if err != nil {
			t.Fatalf("batch (to %d, %d entries) decoded from %x re-encodes as %x, which does not decode: %v", to, len(first), b, again, err)
		}
		if to2 != to {
			t.Fatalf("to %d re-decodes as %d", to, to2)
		}
		checkEntries(t, "re-decoded", es2, first)
	})
}

// A segment's report travels in Closed and Report: every field it carries
// comes back, and garbage is an error, never a panic.
func TestWireReportRoundTrip(t *testing.T) {
	rep := []ReportStage{
		{Stats: ra.StageStats{Stage: "sqrt", Device: 1}, Lat: ra.StageLatency{Stage: "sqrt", Device: 1, Samples: 40,
			QueueWait: ra.Percentiles{P50: 1500, P90: 2500, P99: 9000}, Service: ra.Percentiles{P50: 100, P90: 200, P99: 300}}},
		{Stats: ra.StageStats{Stage: "plus1", Device: 0}, Lat: ra.StageLatency{Stage: "plus1"}},
	}
	rep[0].Stats.State, rep[0].Stats.Processed, rep[0].Stats.Dropped, rep[0].Stats.Errors, rep[0].Stats.Traced = 3, 1000, 2, 1, 40
	rep[0].Stats.InQueued = []int{5, 6}
	check := func(what string, got []ReportStage) {
		t.Helper()
		if len(got) != len(rep) {
			t.Fatalf("%s: %d stages, want %d", what, len(got), len(rep))
		}
		for i, w := range rep {
			g := got[i]
			if g.Stats.Stage != w.Stats.Stage || g.Stats.Device != w.Stats.Device || g.Stats.State != w.Stats.State ||
				g.Stats.Processed != w.Stats.Processed || g.Stats.Dropped != w.Stats.Dropped || g.Stats.Errors != w.Stats.Errors ||
				g.Stats.Traced != w.Stats.Traced || g.Stats.Queued() != w.Stats.Queued() {
				t.Errorf("%s: stage %d stats %+v, want %+v", what, i, g.Stats, w.Stats)
			}
			if g.Lat.Stage != w.Stats.Stage || g.Lat.Samples != w.Lat.Samples || g.Lat.QueueWait != w.Lat.QueueWait || g.Lat.Service != w.Lat.Service {
				t.Errorf("%s: stage %d latency %+v, want %+v", what, i, g.Lat, w.Lat)
			}
		}
	}
	text, got, err := DecodeClosed(EncodeClosed("stage x: boom", rep))
	if err != nil || text != "stage x: boom" {
		t.Fatalf("Closed: %q, %v", text, err)
	}
	check("Closed", got)
	b := EncodeReport(rep)
	got, err = DecodeReport(b)
	if err != nil {
		t.Fatal(err)
	}
	check("Report", got)
	for n := range len(b) {
		_, err := DecodeReport(b[:n])
		checkBad(t, fmt.Sprintf("prefix of %d of %d bytes", n, len(b)), err, "")
	}
	_, err = DecodeReport(append(bytes.Clone(b), 0))
	checkBad(t, "trailing byte", err, "trailing")
	state := rawMsgpack(func(e *msgpack.Encoder) {
		e.EncodeArrayLen(3)
		e.EncodeUint(CodecVersion)
		e.EncodeUint(KindReport)
		e.EncodeArrayLen(1)
		e.EncodeArrayLen(1)
		e.EncodeArrayLen(reportFields)
		e.EncodeString("s")
		e.EncodeInt(0)
		e.EncodeUint(1 << 40)
	})
	_, err = DecodeReport(state)
	checkBad(t, "state past 32 bits", err, "state")
	_, _, err = DecodeClosed(EncodeReport(rep))
	checkBad(t, "a Report for a Closed", err, "kind 10")
}
