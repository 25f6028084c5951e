package egress

import (
	"context"
	"testing"

	"github.com/asynkron/protoactor-go/actor"
)

func TestCountAndCheck(t *testing.T) {
	ch := make(chan res)
	pid := actor.NewPID("local", "sink")
	f := func(res) {}
	for _, c := range []struct {
		s     Sink[res]
		slots bool
		n     int
		err   string
	}{
		{Sink[res]{}, false, 0, ""},
		{Sink[res]{Func: f}, false, 1, ""},
		{Sink[res]{Chan: ch}, false, 1, ""},
		{Sink[res]{PID: pid}, false, 1, ""},
		{Sink[res]{Func: f, PID: pid}, false, 2, "Deliver names 2 sinks; set one of Func, Chan, PID"},
		{Sink[res]{Func: f, Chan: ch, PID: pid}, true, 4, "Deliver names 4 sinks; set one of Func, Chan, PID"},
		{Sink[res]{}, true, 1, "a slots sink takes a pipeline's raw egress batches, and these results arrive one at a time, decoded; set Func, Chan or PID"},
	} {
		if n := c.s.Count(c.slots); n != c.n {
			t.Errorf("%+v (slots %v): Count %d, want %d", c.s, c.slots, n, c.n)
		}
		err := c.s.Check(c.slots)
		if (err == nil) != (c.err == "") || (err != nil && err.Error() != c.err) {
			t.Errorf("%+v (slots %v): Check %v, want %q", c.s, c.slots, err, c.err)
		}
	}
}

// To hands a result to each kind of sink; a Chan nobody reads is given up
// when done ends; the zero Sink drops it.
func TestTo(t *testing.T) {
	never := func(*actor.PID, any) { t.Error("sent to a PID") }
	var got []uint64
	Sink[res]{Func: func(r res) { got = append(got, r.id) }}.To(context.Background(), res{id: 1}, never)
	ch := make(chan res, 1)
	Sink[res]{Chan: ch}.To(context.Background(), res{id: 2}, never)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	Sink[res]{Chan: make(chan res)}.To(ctx, res{id: 3}, never) // returns: done has ended
	pid := actor.NewPID("local", "sink")
	Sink[res]{PID: pid}.To(context.Background(), res{id: 4}, func(to *actor.PID, msg any) {
		if to != pid {
			t.Errorf("sent to %v", to)
		}
		got = append(got, msg.(res).id)
	})
	Sink[res]{}.To(context.Background(), res{id: 5}, never)
	if len(got) != 2 || got[0] != 1 || got[1] != 4 || (<-ch).id != 2 {
		t.Fatalf("got %v", got)
	}
}
