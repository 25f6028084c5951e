package fanout

import (
	"errors"
	"strings"
	"testing"

	"github.com/asynkron/protoactor-go/actor"
)

type letter struct{ id uint64 }

// Every subscriber gets the letter, in order: the callback, the channel,
// the PID.
func TestTellOrder(t *testing.T) {
	var order []string
	ch := make(chan letter, 1)
	pid := actor.NewPID("local", "dead")
	f := &Fanout[letter]{Name: "p", On: func(d letter) { order = append(order, "on") }, Chan: ch, PID: pid}
	send := func(to *actor.PID, msg any) {
		if len(ch) != 1 {
			t.Error("sent to the PID before the channel")
		}
		if to != pid || msg.(letter).id != 7 {
			t.Errorf("sent %v to %v", msg, to)
		}
		order = append(order, "pid")
	}
	f.Tell(letter{7}, send, func(any, []byte) { t.Error("no panic, yet panicked was called") })
	if got := strings.Join(order, ","); got != "on,pid" || (<-ch).id != 7 {
		t.Fatalf("order %q", got)
	}
}

// A panicking callback is recovered, reported with its value and stack,
// and the letter still reaches the channel and the PID.
func TestTellRecoversOn(t *testing.T) {
	ch := make(chan letter, 1)
	sent := 0
	f := &Fanout[letter]{On: func(letter) { panic("boom") }, Chan: ch, PID: actor.NewPID("local", "dead")}
	var value any
	var stack []byte
	f.Tell(letter{3}, func(*actor.PID, any) { sent++ }, func(v any, s []byte) { value, stack = v, s })
	if value != "boom" || !strings.Contains(string(stack), "goroutine ") || !strings.Contains(string(stack), "fanout_test.go") {
		t.Fatalf("panicked got %v, stack:\n%s", value, stack)
	}
	if len(ch) != 1 || sent != 1 {
		t.Fatalf("after the panic: %d on the channel, %d sent; want 1 and 1", len(ch), sent)
	}
}

// A Fanout naming nobody does nothing.
func TestTellNobody(t *testing.T) {
	f := &Fanout[letter]{Name: "p"}
	f.Tell(letter{1}, func(*actor.PID, any) { t.Error("sent with no PID") }, func(any, []byte) { t.Error("panicked") })
}

func TestCall(t *testing.T) {
	called := false
	if v, s, ok := Call(func() { called = true }); ok || v != nil || s != nil || !called {
		t.Fatalf("Call of a plain func: %v %v %v (called %v)", v, s, ok, called)
	}
	errBoom := errors.New("boom")
	v, s, ok := Call(func() { panic(errBoom) })
	if !ok || v != errBoom || !strings.Contains(string(s), "goroutine ") {
		t.Fatalf("Call of a panicking func: %v %v\n%s", v, ok, s)
	}
	// panic(nil) is a panic too (a *runtime.PanicNilError since Go 1.21).
	if _, _, ok := Call(func() { panic(nil) }); !ok {
		t.Fatal("panic(nil) not reported")
	}
}
