package lanes

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	rk "github.com/ringactor/ringactor/ringkernel"
)

// msg is a message; a keyless one's payload ends before its key, a
// bad one's does not encode.
type msg struct {
	id, key      uint32
	keyless, bad bool
}

// spread is a Spread of n lanes, lane l taking took(l) messages a send;
// what each lane got, and the messages dead-lettered for want of a key
// (under got[-1]).
func spread(n int, keyed bool, took func(l int) int) (*Spread[msg], map[int][]msg) {
	got := map[int][]msg{}
	auto := uint32(0)
	return Over(First{Stage: "k", N: n, Keyed: keyed, Key: 4}, 8, func(m *msg) {
		if m.id == 0 {
			auto++
			m.id = 1000 + auto
		}
	}, func(_ context.Context, l int, ms []msg, ids []uint64) (int, error) {
		k := min(len(ms), took(l))
		got[l] = append(got[l], ms...)
		for i, m := range ms {
			ids[i] = uint64(m.id)
		}
		if k < len(ms) {
			return k, fmt.Errorf("lane %d full", l)
		}
		return k, nil
	}, func(m msg, b []byte) ([]byte, bool) {
		binary.LittleEndian.PutUint32(b, m.id)
		binary.LittleEndian.PutUint32(b[4:], m.key)
		if m.keyless {
			return b[:4], true
		}
		return b[:8], !m.bad
	}, func(ms []msg, ids []uint64, cause error) {
		got[-1] = append(got[-1], ms...)
		for i, m := range ms {
			ids[i] = uint64(m.id)
		}
	}), got
}

// A keyed message without a key is dead-lettered (NoKey), in no lane, as
// the device's RouteKey does; the count stops before it, its id comes
// back, and NoKey's error when no lane had one. A message that does not
// encode goes to a lane round robin, whose send refuses it.
func TestSpreadKeylessIsDeadLettered(t *testing.T) {
	s, got := spread(4, true, func(int) int { return 100 })
	ms := []msg{{id: 1, key: 1}, {id: 2, key: 2}, {id: 3, keyless: true}, {id: 4, key: 4}, {id: 5, bad: true}, {id: 6, keyless: true}}
	ids := make([]uint64, len(ms))
	n, err := s.Send(context.Background(), ms, ids)
	if n != 2 || err == nil || !strings.Contains(err.Error(), "no u32 key at byte 4 (LaneKey)") || !strings.Contains(err.Error(), "2 message(s) dead-lettered, the first 3") {
		t.Fatalf("took %d, %v; want 2 and the no-key error", n, err)
	}
	if want := []uint64{1, 2, 3, 4, 5, 6}; !reflect.DeepEqual(ids, want) {
		t.Fatalf("ids %v, want %v", ids, want)
	}
	if dead := got[-1]; len(dead) != 2 || dead[0].id != 3 || dead[1].id != 6 {
		t.Fatalf("dead-lettered for want of a key: %+v, want messages 3 and 6", dead)
	}
	in := 0
	for l := range 4 {
		for _, m := range got[l] {
			if m.keyless {
				t.Fatalf("keyless message %d went to lane %d", m.id, l)
			}
			in++
		}
	}
	if in != 4 {
		t.Fatalf("%d messages in the lanes, want 4 (the bad one too, for its lane to refuse)", in)
	}
}

// Round robin deals message k of all sends to lane k mod N, each lane in
// send order, and the ids come back in the batch's order.
func TestSpreadRoundRobin(t *testing.T) {
	s, got := spread(3, false, func(int) int { return 100 })
	for b := range 3 {
		ms := []msg{{id: uint32(4*b + 1)}, {id: uint32(4*b + 2)}, {id: uint32(4*b + 3)}, {id: uint32(4*b + 4)}}
		ids := make([]uint64, 4)
		if n, err := s.Send(context.Background(), ms, ids); n != 4 || err != nil {
			t.Fatal(n, err)
		}
		if want := []uint64{uint64(4*b + 1), uint64(4*b + 2), uint64(4*b + 3), uint64(4*b + 4)}; !reflect.DeepEqual(ids, want) {
			t.Fatalf("ids %v, want %v", ids, want)
		}
	}
	for l := range 3 {
		for i, m := range got[l] {
			if want := uint32(l + 3*i + 1); m.id != want {
				t.Fatalf("lane %d message %d: id %d, want %d", l, i, m.id, want)
			}
		}
	}
}

// A key always picks the lane ringkernel's RouteKey picks; a lane that
// takes fewer than it is given cuts the count at the first message not
// taken, and its error comes back.
func TestSpreadKeyedAndPartial(t *testing.T) {
	s, got := spread(4, true, func(l int) int {
		if l == 2 {
			return 1 // lane 2 takes one message, the others all
		}
		return 100
	})
	var ms []msg
	for i := range 40 {
		ms = append(ms, msg{id: uint32(i + 1), key: uint32(i % 16)})
	}
	n, err := s.Send(context.Background(), ms, nil)
	if err == nil {
		t.Fatal("lane 2's refusal was lost")
	}
	cut := -1
	seen := 0
	for i, m := range ms {
		var b [8]byte
		binary.LittleEndian.PutUint32(b[4:], m.key)
		l, _ := rk.ResultRoute(rk.RouteKey, 4, 0, b[:], 4, 0)
		if l == 2 {
			if seen++; seen == 2 && cut < 0 {
				cut = i
			}
		}
	}
	if cut < 0 {
		t.Fatal("no two messages of lane 2: pick other keys")
	}
	if n != cut {
		t.Fatalf("took %d, want %d (lane 2 took one)", n, cut)
	}
	for l, lms := range got {
		for _, m := range lms {
			var b [8]byte
			binary.LittleEndian.PutUint32(b[4:], m.key)
			if want, _ := rk.ResultRoute(rk.RouteKey, 4, 0, b[:], 4, 0); want != l {
				t.Fatalf("key %d went to lane %d, want %d", m.key, l, want)
			}
		}
	}
}

func TestExpand(t *testing.T) {
	view := func(s Stage) Stage { return s }
	set := func(s Stage, n Node) Stage {
		s.Name, s.To, s.Route, s.KeyOffset, s.Lanes = n.Name, n.To, n.Route, n.KeyOffset, 0
		return s
	}
	in := []Stage{{Name: "in"}, {Name: "a", Lanes: 3, Keyed: true, Key: 8}, {Name: "b", Lanes: 3, Keyed: true}, {Name: "out"}}
	out, first, err := Expand(in, 0, view, set)
	if err != nil {
		t.Fatal(err)
	}
	if first != (First{Stage: "in", N: 1}) {
		t.Fatalf("first %+v", first)
	}
	var got []string
	for _, s := range out {
		got = append(got, fmt.Sprintf("%s→%v/%s/%d", s.Name, s.To, s.Route, s.KeyOffset))
	}
	want := []string{"in→[a#0 a#1 a#2]/key/8", "a#0→[b#0]/one/0", "a#1→[b#1]/one/0", "a#2→[b#2]/one/0",
		"b#0→[out]/one/0", "b#1→[out]/one/0", "b#2→[out]/one/0", "out→[]/one/0"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("expanded\n%v\nwant\n%v", got, want)
	}
	if out, first, err := Expand([]Stage{{Name: "a", Lanes: 2}, {Name: "b"}}, 0, view, set); err != nil || first != (First{Stage: "a", N: 2}) || len(out) != 3 {
		t.Fatal(out, first, err)
	}
	same := []Stage{{Name: "a"}, {Name: "b", Lanes: 1}}
	if out, _, _ := Expand(same, 0, view, set); !reflect.DeepEqual(out, same) {
		t.Fatalf("no lanes: %v", out)
	}
	if _, _, err := Expand([]Stage{{Name: "a", Lanes: 2}}, 1, view, set); err == nil || errors.Unwrap(err) != nil {
		t.Fatalf("a group's stage with lanes: %v", err)
	}
}
