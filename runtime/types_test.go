package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ringactor/ringactor/kernels"
	ra "github.com/ringactor/ringactor/runtime"
)

// order and invoice are msgpack types (a string field is not fixed
// layout); test_price, a Go stage, turns one into the other.
type order struct {
	Item  string
	Qty   int
	Price float64
}

type invoice struct {
	Item  string
	Total float64
}

const orderType, invoiceType = 100, 101

var (
	registerOnce sync.Once
	registerErr  error
)

// registerTestTypes registers the test types and Go stage once per
// process: the registries are the process's, and tests run -count=N.
func registerTestTypes(t *testing.T) {
	t.Helper()
	registerOnce.Do(func() {
		if _, registerErr = ra.RegisterType[order](orderType); registerErr != nil {
			return
		}
		if _, registerErr = ra.RegisterType[invoice](invoiceType); registerErr != nil {
			return
		}
		registerErr = ra.GoStage("test_price", func(o order) (invoice, error) {
			if o.Qty < 0 {
				return invoice{}, fmt.Errorf("order of %s: negative quantity %d", o.Item, o.Qty)
			}
			return invoice{Item: o.Item, Total: float64(o.Qty) * o.Price}, nil
		})
	})
	if registerErr != nil {
		t.Fatal(registerErr)
	}
}

func keyedN(i int) kernels.Keyed {
	k := kernels.Keyed{Key: uint32(i % 7)}
	for j := range k.Values {
		k.Values[j] = float32(i%50) + float32(j)
	}
	return k
}

// A fixed-layout type through typed device stages, from Send, from the
// stage's PID and as requests: every result is the Go reference, the
// account conserves, and a float vector sent to the Keyed stage is
// refused as the wrong type.
func TestTypedFixedLayoutPipeline(t *testing.T) {
	e := deviceEnv(t)
	var mu sync.Mutex
	got := map[uint64][]float32{}
	var dead []ra.DeadLetter
	spec := ra.PipelineSpec{Name: "typed", Stages: []ra.StageSpec{
		{Name: "in", Op: "pass", Device: testDevice(0)},
		{Name: "scale", Op: "keyed_scale", Params: []float32{2}, Device: testDevice(1)},
		{Name: "count", Op: "keyed_count", Stateful: true, Device: testDevice(1)},
		{Name: "sum", Op: "keyed_sum", Device: testDevice(2)},
	}, Deliver: ra.Sink{Func: func(r ra.Result) {
		v, err := ra.As[[]float32](r)
		if err != nil {
			t.Error(err)
		}
		mu.Lock()
		got[r.ID] = v
		mu.Unlock()
	}}, OnDeadLetter: func(d ra.DeadLetter) { mu.Lock(); dead = append(dead, d); mu.Unlock() }}
	p := buildStarted(t, e.RT, spec)
	pid, _ := p.PID("in")
	// Explicit ids from base on, clear of the auto ids (from 1) that the
	// bare value and the requests take.
	const n, base = 300, 1000
	for i := 1; i <= n; i++ {
		k := keyedN(i)
		switch i % 3 {
		case 0:
			if err := p.Send(ctxT(t), ra.Data{ID: base + uint64(i), Value: k}); err != nil {
				t.Fatal(err)
			}
		case 1:
			if err := p.Send(ctxT(t), ra.Data{ID: base + uint64(i), Value: &k}); err != nil {
				t.Fatal(err)
			}
		case 2:
			e.RT.System().Root.Send(pid, ra.Data{ID: base + uint64(i), Value: k})
		}
	}
	// A bare value to the PID is data too.
	e.RT.System().Root.Send(pid, keyedN(n+1))
	// Requests, by Request and RequestAs.
	for i := n + 2; i < n+12; i++ {
		v, err := ra.RequestAs[[]float32](ctxT(t), p, keyedN(i))
		if err != nil {
			t.Fatal(err)
		}
		if w := keyedWant(keyedN(i)); !slices.Equal(v, w) {
			t.Fatalf("request %d: %v, want %v", i, v, w)
		}
	}
	// The pass stage takes what keyed_scale takes: a float vector is the wrong type.
	if err := p.Send(ctxT(t), ra.Data{Floats: []float32{1}}); !errors.Is(err, ra.ErrWrongType) {
		t.Fatalf("floats into a Keyed pipeline: %v", err)
	}
	if err := p.Close(ctxT(t), true); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	for i := 1; i <= n; i++ {
		if w := keyedWant(keyedN(i)); !slices.Equal(got[base+uint64(i)], w) {
			t.Fatalf("message %d: %v, want %v", i, got[base+uint64(i)], w)
		}
	}
	if len(got) != n+1 {
		t.Fatalf("%d results, want %d", len(got), n+1)
	}
	if len(dead) != 1 || dead[0].Reason != ra.ReasonWrongType || !errors.Is(dead[0].Err, ra.ErrWrongType) {
		t.Fatalf("dead letters %v", dead)
	}
	st := p.Stats()
	if st.Sent != n+11+1 || st.Delivered != n+11 || st.DeadLettered != 1 || st.InFlight != 0 {
		t.Fatalf("account %+v", st)
	}
	// keyed_count saw every Keyed once, in order: its count is in no
	// result (keyed_sum drops it), so ask its kernel.
	if c := st.Stages[2]; c.Processed != n+11 || c.Dropped != 0 {
		t.Fatalf("counter stage %+v", c.Status)
	}
}

// keyedWant is the typed pipeline's result for k: [key, 2 * sum].
func keyedWant(k kernels.Keyed) []float32 {
	var s float32
	for _, v := range k.Values {
		s += v * 2
	}
	return []float32{float32(k.Key), s}
}

// A msgpack type through a Go stage (GoStage): results decode with As,
// requests get theirs, a stage error answers its request with the dead
// letter, and a request whose ctx is cancelled ends in the account.
func TestTypedMsgpackGoStage(t *testing.T) {
	registerTestTypes(t)
	e := newEnv(t, "")
	res := make(chan ra.Result, 100)
	p := buildStarted(t, e.RT, ra.PipelineSpec{Name: "orders", Stages: []ra.StageSpec{
		{Name: "price", Op: "test_price", Device: e.RT.Registry().CPUDevice().ID, SlotSize: 128}, // a Go stage runs on the CPU
	}, Deliver: ra.Sink{Chan: res}})
	items := []string{"bolt", "nut", "a rather long item name that msgpack carries as a string", "washer"}
	for i, it := range items {
		if err := p.Send(ctxT(t), ra.Data{ID: uint64(i + 1), Value: order{Item: it, Qty: i + 1, Price: 0.5}}); err != nil {
			t.Fatal(err)
		}
	}
	for range items {
		r := <-res
		v, err := ra.As[invoice](r)
		if err != nil {
			t.Fatal(err)
		}
		i := int(r.ID - 1)
		if r.Type != invoiceType || v.Item != items[i] || v.Total != float64(i+1)*0.5 {
			t.Fatalf("result %d: type %d %+v", r.ID, r.Type, v)
		}
		if _, err := ra.As[order](r); !errors.Is(err, ra.ErrWrongType) {
			t.Fatalf("an invoice as an order: %v", err)
		}
	}
	inv, err := ra.RequestAs[invoice](ctxT(t), p, order{Item: "gear", Qty: 3, Price: 2})
	if err != nil || inv != (invoice{Item: "gear", Total: 6}) {
		t.Fatalf("request: %+v, %v", inv, err)
	}
	// RequestFuture on the stage's PID answers with the Result.
	pid, _ := p.PID("price")
	fr, err := e.RT.System().Root.RequestFuture(pid, order{Item: "cog", Qty: 2, Price: 4}, 10*time.Second).Result()
	if err != nil {
		t.Fatal(err)
	}
	if r, ok := fr.(ra.Result); !ok {
		t.Fatalf("RequestFuture answered %T %v", fr, fr)
	} else if v, err := ra.As[invoice](r); err != nil || v.Total != 8 {
		t.Fatalf("RequestFuture: %+v, %v", v, err)
	}
	// A stage error answers the request with its dead letter.
	_, err = ra.RequestAs[invoice](ctxT(t), p, order{Item: "spring", Qty: -1})
	var re *ra.RequestError
	if !errors.As(err, &re) || re.Dead.Reason != ra.ReasonStageError || !strings.Contains(err.Error(), "negative quantity") {
		t.Fatalf("a failing request: %v", err)
	}
	// A request whose ctx has already ended is refused before anything is
	// done: not sent, not counted.
	ctx, cancel := context.WithCancel(ctxT(t))
	cancel()
	_, cerr := ra.RequestAs[invoice](ctx, p, order{Item: "late", Qty: 1, Price: 1})
	if !errors.Is(cerr, context.Canceled) {
		t.Fatalf("request with a cancelled ctx: %v; want context.Canceled", cerr)
	}
	if err := p.Close(ctxT(t), true); err != nil {
		t.Fatal(err)
	}
	st := p.Stats()
	if st.Sent != uint64(len(items))+3 || st.Delivered != st.Sent-1 || st.DeadLettered != 1 || st.InFlight != 0 || st.Abandoned != 0 {
		t.Fatalf("account %+v (cancelled request: %v)", st, cerr)
	}
}

// Values of an unregistered type or of a type the stage does not take,
// sent any way, are dead letters with the reason (never a panic, never
// lost), and the senders that can hear an error get one wrapping
// ErrUnregisteredType or ErrWrongType.
func TestWrongAndUnregisteredTypesDeadLettered(t *testing.T) {
	e := deviceEnv(t)
	dl := make(chan ra.DeadLetter, 16)
	spec := guide("wrongtypes")
	spec.DeadLetterChan = dl
	p := buildStarted(t, e.RT, spec)
	pid, _ := p.PID("double")
	type unknown struct{ X int }
	root := e.RT.System().Root
	root.Send(pid, kernels.Keyed{Key: 1})           // registered, but the stage takes floats
	root.Send(pid, unknown{X: 1})                   // not registered
	root.Send(pid, ra.Data{Value: &unknown{X: 2}})  // not registered, as a pointer in a Data
	root.Send(pid, ra.Data{Value: (*unknown)(nil)}) // a nil pointer of an unregistered type
	if err := p.Send(ctxT(t), ra.Data{Value: kernels.Keyed{}}); !errors.Is(err, ra.ErrWrongType) {
		t.Fatalf("Send of a Keyed to a float stage: %v", err)
	}
	if err := p.Send(ctxT(t), ra.Data{Value: 42}); !errors.Is(err, ra.ErrUnregisteredType) {
		t.Fatalf("Send of an int: %v", err)
	}
	if err := p.Send(ctxT(t), ra.Data{Floats: []float32{1}, Value: kernels.Keyed{}}); !errors.Is(err, ra.ErrWrongType) {
		t.Fatalf("Send of Floats and a Value: %v", err)
	}
	fr, err := root.RequestFuture(pid, kernels.Keyed{}, 10*time.Second).Result()
	if re, ok := fr.(*ra.RequestError); err != nil || !ok || re.Dead.Reason != ra.ReasonWrongType {
		t.Fatalf("RequestFuture of a Keyed to a float stage: %v, %v", fr, err)
	}
	if err := p.Send(ctxT(t), ra.Data{Floats: []float32{8}}); err != nil { // the stage still works
		t.Fatal(err)
	}
	if err := p.Close(ctxT(t), true); err != nil {
		t.Fatal(err)
	}
	close(dl)
	reasons := map[string]int{}
	for d := range dl {
		reasons[d.Reason.String()]++
		if d.Stage != "double" {
			t.Errorf("dead letter at stage %q: %v", d.Stage, d)
		}
	}
	if reasons["wrong type"] != 4 || reasons["unregistered type"] != 4 || len(reasons) != 2 {
		t.Fatalf("dead-letter reasons %v", reasons)
	}
	if st := p.Stats(); st.Sent != 9 || st.Delivered != 1 || st.DeadLettered != 8 || st.InFlight != 0 {
		t.Fatalf("account %+v", st)
	}
}

// Build refuses a graph whose edges disagree on the type, naming both ends.
func TestBuildRefusesTypeMismatch(t *testing.T) {
	registerTestTypes(t)
	e := newEnv(t, "")
	cpu := e.RT.Registry().CPUDevice().ID
	for _, c := range []struct {
		stages []ra.StageSpec
		want   string
	}{
		{[]ra.StageSpec{{Name: "sum", Op: "keyed_sum"}, {Name: "scale", Op: "keyed_scale", Params: []float32{1}}},
			`stage "sum" gives []float32 (type 0), but stage "scale", which it sends to, takes kernels.Keyed (type 1)`},
		{[]ra.StageSpec{{Name: "x2", Op: "scale", Params: []float32{2}}, {Name: "count", Op: "keyed_count", Stateful: true}},
			`stage "x2" gives []float32 (type 0), but stage "count"`},
		{[]ra.StageSpec{{Name: "price", Op: "test_price", Device: cpu}, {Name: "p", Op: "pass"}, {Name: "count", Op: "keyed_count", Stateful: true}},
			`stage "p" gives runtime_test.invoice (type 101), but stage "count", which it sends to, takes kernels.Keyed (type 1)`},
		{[]ra.StageSpec{
			{Name: "a", Op: "keyed_scale", Params: []float32{1}, To: []string{"merge"}},
			{Name: "b", Op: "keyed_sum", To: []string{"merge"}},
			{Name: "merge", Op: "keyed_count", Stateful: true}},
			`stage "b" gives []float32 (type 0), but stage "merge"`},
	} {
		_, err := e.RT.Build(ctxT(t), ra.PipelineSpec{Name: "mismatch", Stages: c.stages})
		if !errors.Is(err, ra.ErrBadPipeline) || !strings.Contains(fmt.Sprint(err), c.want) {
			t.Errorf("%v: got %v, want an error saying %q", c.stages, err, c.want)
		}
	}
	// What agrees builds: pass takes what it is fed, and gives it on.
	p, err := e.RT.Build(ctxT(t), ra.PipelineSpec{Name: "agree", Stages: []ra.StageSpec{
		{Name: "p", Op: "pass"}, {Name: "scale", Op: "keyed_scale", Params: []float32{1}}, {Name: "q", Op: "pass"}, {Name: "sum", Op: "keyed_sum"}, {Name: "x2", Op: "scale", Params: []float32{2}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	p.Close(ctxT(t), false)
}

// Registering: ids below FirstUserType are reserved, one id per type and
// one type per id, and registering the same again is a no-op.
func TestRegisterType(t *testing.T) {
	registerTestTypes(t)
	type other struct{ A, B float32 }
	if _, err := ra.RegisterType[other](3); err == nil || !strings.Contains(err.Error(), "reserved") {
		t.Fatalf("a reserved id: %v", err)
	}
	if _, err := ra.RegisterType[other](orderType); err == nil || !strings.Contains(err.Error(), "runtime_test.order's") {
		t.Fatalf("a taken id: %v", err)
	}
	if _, err := ra.RegisterType[order](orderType + 50); err == nil || !strings.Contains(err.Error(), "registered as type 100") {
		t.Fatalf("a second id: %v", err)
	}
	if _, err := ra.RegisterType[*order](orderType + 51); err == nil {
		t.Fatal("a pointer type registered")
	}
	m, err := ra.RegisterType[order](orderType)
	if err != nil || m.ID != orderType || m.Fixed {
		t.Fatalf("registering again: %+v, %v", m, err)
	}
	if k, _ := ra.TypeOf(&kernels.Keyed{}); k.ID != kernels.TypeKeyed || !k.Fixed {
		t.Fatalf("Keyed: %+v", k)
	}
	if err := ra.GoStage("test_unregistered", func(o other) (order, error) { return order{}, nil }); !errors.Is(err, ra.ErrUnregisteredType) {
		t.Fatalf("a Go stage of an unregistered type: %v", err)
	}
}
