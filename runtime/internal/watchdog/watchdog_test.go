package watchdog

import (
	"testing"
	"time"
)

const ms = time.Millisecond

// beat is a stage at a look: its heartbeat (ms after the start), and
// whether it is held: active with work queued. A beat of -1 is a stage
// that is not running (ended).
type beat struct {
	at   int
	held bool
}

func (b beat) stage(start time.Time) Stage {
	if b.at < 0 {
		return Stage{Heartbeat: start, Queued: 3}
	}
	s := Stage{Heartbeat: start.Add(time.Duration(b.at) * ms), Running: true, Active: true}
	if b.held {
		s.Queued = 5
	}
	return s
}

// look is a look at ms after the start.
type look struct {
	at     int
	stages []beat
}

// steady is n on-time looks from ms from to to (every ms apart): stage 0
// stuck at its heartbeat stuck, held; the others going round each look
// (moving), or, with moving false, stuck at 0 too.
func steady(from, to, every, stuck int, others int, moving bool) []look {
	var ls []look
	for at := from; at <= to; at += every {
		st := []beat{{stuck, true}}
		for range others {
			b := beat{0, true}
			if moving {
				b.at = at
			}
			st = append(st, b)
		}
		ls = append(ls, look{at, st})
	}
	return ls
}

// going is looks every 100 ms from ms from to to, at n stages, each held
// and going round its loop at each look.
func going(from, to, n int) []look {
	var ls []look
	for at := from; at <= to; at += 100 {
		st := make([]beat, n)
		for i := range st {
			st[i] = beat{at, true}
		}
		ls = append(ls, look{at, st})
	}
	return ls
}

func cat(lss ...[]look) []look {
	var out []look
	for _, ls := range lss {
		out = append(out, ls...)
	}
	return out
}

// The watch, look by look (HangAfter 400 ms, a look every 100 ms): who
// faults, at which look, with what miss.
func TestWatch(t *testing.T) {
	const limit = 400 * ms
	cases := []struct {
		name   string
		looks  []look
		atLook int // the look (index) that faults; -1: none does
		stage  int
		missed time.Duration
	}{
		// The first look sees every heartbeat move (from nothing); from the
		// second the stuck stage misses 100 ms a look: 500 > 400 at 600.
		{"a hung stage beside a running one", steady(100, 1000, 100, 0, 1, true), 5, 0, 500 * ms},
		{"a hung stage alone in its pipeline", steady(100, 1000, 100, 0, 0, true), 5, 0, 500 * ms},
		{"a hung stage beside an ended one", func() []look {
			ls := steady(100, 1000, 100, 0, 0, true)
			for i := range ls {
				ls[i].stages = append(ls[i].stages, beat{-1, false})
			}
			return ls
		}(), 5, 0, 500 * ms},
		{"exactly the limit is no fault", steady(100, 500, 100, 0, 1, true), -1, 0, 0},
		// Whole-process stall: no loop of the pipeline went round: nothing
		// counts (every stage hung at once reads the same).
		{"a whole-process stall", steady(100, 3000, 100, 0, 2, false), -1, 0, 0},
		// A look 1 s after the last (more than twice the interval) counts
		// for nothing: the miss is 200 ms before it, and the fault comes
		// three looks after it rather than at it.
		{"a late look counts nothing", cat(steady(100, 300, 100, 0, 1, true), steady(1300, 2000, 100, 0, 1, true)), 6, 0, 500 * ms},
		// A freeze of the whole process for 1 s with work queued
		// everywhere; the watchdog looks first when it thaws, at heartbeats
		// the freeze made old, then the loops go round again.
		{"a freeze, the watchdog looking first", cat(going(100, 300, 2), []look{{1300, []beat{{300, true}, {300, true}}}}, going(1400, 3000, 2)), -1, 0, 0},
		{"just on time (twice the interval) counts", cat(steady(100, 200, 100, 0, 1, true), steady(400, 600, 200, 0, 1, true)), 3, 0, 500 * ms},
		{"a heartbeat that moves starts again", cat(steady(100, 400, 100, 0, 1, true), steady(500, 1200, 100, 450, 1, true)), 9, 0, 500 * ms},
		{"an idle stage with work queued is not hung", func() []look {
			ls := steady(100, 2000, 100, 0, 1, true)
			for _, l := range ls {
				l.stages[0].held = false
			}
			return ls
		}(), -1, 0, 0},
		{"the first of two hung stages", func() []look {
			ls := steady(100, 1000, 100, 0, 1, true)
			for i := range ls {
				ls[i].stages = append([]beat{{0, true}}, ls[i].stages...)
			}
			return ls
		}(), 5, 0, 500 * ms},
	}
	for _, c := range cases {
		start := time.Unix(1000, 0)
		w := New(len(c.looks[0].stages), limit, start)
		if w.Every() != 100*ms {
			t.Fatalf("every %v", w.Every())
		}
		got := -1
		for k, l := range c.looks {
			st := make([]Stage, len(l.stages))
			for i, b := range l.stages {
				st[i] = b.stage(start)
			}
			i, missed := w.Look(start.Add(time.Duration(l.at)*ms), st)
			if i < 0 {
				continue
			}
			if k != c.atLook || i != c.stage || missed != c.missed {
				t.Errorf("%s: look %d (at %d ms) faults stage %d after %v; want look %d, stage %d, %v", c.name, k, l.at, i, missed, c.atLook, c.stage, c.missed)
			}
			got = k
			break
		}
		if got < 0 && c.atLook >= 0 {
			t.Errorf("%s: no fault; want one at look %d", c.name, c.atLook)
		}
	}
}

// A stage that is not Active (idle, or not running) or has nothing
// queued never misses, whatever its heartbeat.
func TestNotHeld(t *testing.T) {
	start := time.Unix(0, 0)
	for _, s := range []Stage{
		{Heartbeat: start, Running: true, Active: true},              // nothing queued
		{Heartbeat: start, Running: true, Queued: 9},                 // idle
		{Heartbeat: start, Queued: 9},                                // ended
		{Heartbeat: start, Running: false, Active: false, Queued: 0}, // all of it
	} {
		w := New(2, 40*ms, start)
		for k := 1; k < 100; k++ {
			now := start.Add(time.Duration(k*10) * ms)
			other := Stage{Heartbeat: now, Running: true, Active: true, Queued: 1}
			if i, _ := w.Look(now, []Stage{s, other}); i >= 0 {
				t.Fatalf("%+v faulted at look %d", s, k)
			}
		}
	}
}

func TestInterval(t *testing.T) {
	for _, c := range []struct{ limit, want time.Duration }{
		{10 * time.Second, 2500 * ms}, {400 * ms, 100 * ms}, {4 * ms, ms}, {ms, ms}, {time.Microsecond, ms},
	} {
		if got := Interval(c.limit); got != c.want {
			t.Errorf("Interval(%v) = %v, want %v", c.limit, got, c.want)
		}
	}
}
