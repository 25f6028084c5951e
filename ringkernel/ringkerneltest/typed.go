package ringkerneltest

import (
	"encoding/binary"
	"math"
	"slices"
	"testing"

	"github.com/ringactor/ringactor/kernels"
	"github.com/ringactor/ringactor/p2pqueue"
	rk "github.com/ringactor/ringactor/ringkernel"
)

func keyedMsg(id uint64, k kernels.Keyed) p2pqueue.Message {
	return p2pqueue.Message{Header: p2pqueue.Header{ID: id, Type: kernels.TypeKeyed}, Payload: append([]byte(nil), kernels.FixedBytes(&k)...)}
}

func keyedOf(t *testing.T, m p2pqueue.Message) kernels.Keyed {
	t.Helper()
	if m.Type != kernels.TypeKeyed {
		t.Fatalf("message %d: type %d, want Keyed (%d)", m.ID, m.Type, kernels.TypeKeyed)
	}
	var k kernels.Keyed
	if err := kernels.DecodeFixed(&k, m.Payload); err != nil {
		t.Fatalf("message %d: %v", m.ID, err)
	}
	return k
}

// testKeyed is message i's Keyed.
func testKeyed(i int) kernels.Keyed {
	k := kernels.Keyed{Key: uint32(i % 11), Count: uint32(i)}
	for j := range k.Values {
		k.Values[j] = float32(i) + float32(j)/4
	}
	return k
}

// Typed stages on both loops: each result carries the type its op gave
// and the bytes the Go reference computes; messages of a type the op does
// not take (a float vector, a Keyed of the wrong size) are dead-lettered
// as "wrong type", not counted as the stage's errors, and leave no gap.
func (s *suite) testTypedStages(t *testing.T) {
	const n = 120
	// Every 9th message is a float vector, every 13th a Keyed cut short.
	msgs := make([]p2pqueue.Message, n)
	bad := func(i int) bool { return i%9 == 4 || i%13 == 6 }
	for i := range msgs {
		msgs[i] = keyedMsg(uint64(i+1), testKeyed(i))
		switch {
		case i%9 == 4:
			msgs[i] = p2pqueue.Message{Header: p2pqueue.Header{ID: uint64(i + 1)}, Payload: kernels.EncodeFloats(nil, []float32{1, 2})}
		case i%13 == 6:
			msgs[i].Payload = msgs[i].Payload[:12]
		}
	}
	wantDead := func(t *testing.T, dead []rk.DeadLetter, st rk.Status) {
		t.Helper()
		var got, want []uint64
		for i := range n {
			if bad(i) {
				want = append(want, uint64(i+1))
			}
		}
		for _, d := range dead {
			got = append(got, d.ID)
			if d.Code != rk.CodeWrongType || d.Reason.String() != "wrong type" {
				t.Errorf("message %d dead-lettered with %v (%v), want wrong type", d.ID, d.Code, d.Reason)
			}
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Fatalf("dead letters %v, want %v", got, want)
		}
		if st.Errors != 0 || st.Dropped != uint64(len(want)) || st.Processed != uint64(n-len(want)) {
			t.Fatalf("status processed %d dropped %d errors %d; want %d, %d, 0", st.Processed, st.Dropped, st.Errors, n-len(want), len(want))
		}
	}
	t.Run("keyed_scale", func(t *testing.T) {
		got, dead, st := s.routedMsgs(t, rk.Stage{Name: "s", Op: "keyed_scale", Params: []float32{1.5}}, rk.RouteOne, 0, 1, msgs)
		wantDead(t, dead, st)
		j := 0
		for i := range n {
			if bad(i) {
				continue
			}
			m := got[0][j]
			j++
			want := testKeyed(i)
			for v := range want.Values {
				want.Values[v] *= 1.5
			}
			if m.ID != uint64(i+1) || keyedOf(t, m) != want {
				t.Fatalf("result %d: message %d %+v, want %d %+v", j-1, m.ID, keyedOf(t, m), i+1, want)
			}
		}
	})
	t.Run("keyed_sum", func(t *testing.T) {
		got, dead, st := s.routedMsgs(t, rk.Stage{Name: "s", Op: "keyed_sum"}, rk.RouteOne, 0, 1, msgs)
		wantDead(t, dead, st)
		j := 0
		for i := range n {
			if bad(i) {
				continue
			}
			m := got[0][j]
			j++
			k := testKeyed(i)
			var sum float32
			for _, v := range k.Values {
				sum += v
			}
			if m.Type != kernels.TypeFloats || !slices.Equal(payload(t, m), []float32{float32(k.Key), sum}) {
				t.Fatalf("message %d: type %d %v, want floats [%d %g]", m.ID, m.Type, payload(t, m), k.Key, sum)
			}
		}
	})
	t.Run("keyed_count", func(t *testing.T) {
		got, dead, st := s.routedMsgs(t, rk.Stage{Name: "s", Op: "keyed_count", Stateful: true}, rk.RouteOne, 0, 1, msgs)
		wantDead(t, dead, st)
		seen := map[uint32]uint32{}
		j := 0
		for i := range n {
			if bad(i) {
				continue
			}
			k := keyedOf(t, got[0][j])
			j++
			seen[k.Key]++
			if k.Count != seen[k.Key] || k.Values != testKeyed(i).Values {
				t.Fatalf("message %d: key %d count %d, want %d", i+1, k.Key, k.Count, seen[k.Key])
			}
		}
	})
	t.Run("float op given a Keyed", func(t *testing.T) {
		ms := []p2pqueue.Message{keyedMsg(1, testKeyed(1)), {Header: p2pqueue.Header{ID: 2}, Payload: kernels.EncodeFloats(nil, []float32{3})}}
		got, dead, st := s.routedMsgs(t, rk.Stage{Name: "s", Op: "scale", Params: []float32{2}}, rk.RouteOne, 0, 1, ms)
		if len(dead) != 1 || dead[0].ID != 1 || dead[0].Code != rk.CodeWrongType || st.Errors != 0 {
			t.Fatalf("dead letters %v (errors %d), want message 1 as wrong type", dead, st.Errors)
		}
		if len(got[0]) != 1 || got[0][0].ID != 2 || payload(t, got[0][0])[0] != 6 {
			t.Fatalf("results %v", got[0])
		}
	})
}

// pass hands any type on as it is, and RouteKey routes a Keyed by its key:
// one key always down the same link.
func (s *suite) testTypedPassRoutesByKey(t *testing.T) {
	const n = 200
	msgs := make([]p2pqueue.Message, n)
	for i := range msgs {
		msgs[i] = keyedMsg(uint64(i+1), testKeyed(i))
		if i%10 == 0 { // a user type the loop knows nothing of: its key is its first u32 too
			msgs[i].Type = kernels.FirstUserType + 3
			msgs[i].Payload = binary.LittleEndian.AppendUint32(nil, uint32(i%11))
			msgs[i].Payload = binary.LittleEndian.AppendUint32(msgs[i].Payload, math.Float32bits(float32(i)))
		}
	}
	got, dead, st := s.routedMsgs(t, rk.Stage{Name: "s", Op: "pass"}, rk.RouteKey, 0, 2, msgs)
	if len(dead) != 0 || st.Processed != n {
		t.Fatalf("dead letters %v, processed %d", dead, st.Processed)
	}
	total := 0
	for d, ms := range got {
		last := uint64(0)
		for _, m := range ms {
			i := int(m.ID - 1)
			if m.ID <= last {
				t.Fatalf("link %d: message %d after %d", d, m.ID, last)
			}
			last = m.ID
			if m.Type != msgs[i].Type || !slices.Equal(m.Payload, msgs[i].Payload) {
				t.Fatalf("message %d came out as type %d %x, went in as %d %x", m.ID, m.Type, m.Payload, msgs[i].Type, msgs[i].Payload)
			}
			if want := int(rk.KeyHash(uint32(i%11)) % 2); d != want {
				t.Fatalf("message %d (key %d) went down link %d, want %d", m.ID, i%11, d, want)
			}
		}
		total += len(ms)
	}
	if total != n {
		t.Fatalf("%d results, want %d", total, n)
	}
}
