package runtime

import (
	"time"

	"github.com/ringactor/ringactor/p2pqueue"
	eg "github.com/ringactor/ringactor/runtime/internal/egress"
)

// startPumps starts package egress's pump per exit stage, which delivers
// its results to the spec's sink; pumpDone closes when all have ended.
func (p *Pipeline) startPumps() {
	pump := &eg.Pump[Result]{Name: p.spec.Name, Sink: p.spec.Deliver.sink(), Slots: p.spec.Deliver.slots, Host: exitHost{p}, Acct: p.acct,
		Pending: p.reqs.Pending, Send: p.rt.system.Root.Send, Ctx: p.pumpCtx, Closing: p.closingCh, Gate: &p.rt.pumpStall, ErrNotRead: ErrSinkNotRead}
	exits := make([]eg.Exit, len(p.exits))
	for i, s := range p.exits {
		exits[i] = eg.Exit{From: s.id(), Stage: s.spec.Name, Link: s.egress.c}
	}
	pump.Start(exits, p.pumpDone)
}

// DefaultCloseWait is Sink.CloseWait's default.
const DefaultCloseWait = eg.DefaultCloseWait

// sink is s as package egress takes it: without slots.
func (s Sink) sink() eg.Sink[Result] {
	return eg.Sink[Result]{Func: s.Func, Chan: s.Chan, PID: s.PID, Batch: s.Batch, CloseWait: s.CloseWait}
}

// exitHost is the pipeline's side of its egress pumps (egress.Host).
type exitHost struct{ p *Pipeline }

func (exitHost) Result(r *Result, stage string, h *p2pqueue.Header, floats []float32, bytes []byte) {
	r.ID, r.Type, r.Floats, r.Bytes, r.Stage = h.ID, h.Type, floats, bytes, stage // field by field: no copy of a whole Result
}

func (x exitHost) Answer(id uint64, r Result) bool {
	return x.p.reqs.Pending() && x.p.answer(id, outcome{r: r})
}

func (x exitHost) Dead(from uint32, id uint64, why eg.Why, err error) {
	reason := [...]Reason{eg.Undecodable: ReasonDecodeError, eg.Panicked: ReasonStagePanic, eg.NotRead: ReasonSinkNotRead}[why]
	x.p.tellDead(from, DeadLetter{ID: id, Stage: "egress", Device: p2pqueue.Host, Reason: reason, Err: err})
}

func (x exitHost) Traced(from uint32, id uint64, at time.Time) { x.p.traceEnd(id, from, at, nil) }

// id is the stage's id: its index in the spec plus one (0 is the host),
// written as Origin into what its kernel emits.
func (s *stage) id() uint32 { return uint32(s.idx + 1) }
