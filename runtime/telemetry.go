package runtime

import (
	"time"

	rk "github.com/ringactor/ringactor/ringkernel"
	"github.com/ringactor/ringactor/runtime/internal/meter"
	"github.com/ringactor/ringactor/runtime/internal/spans"
	"github.com/ringactor/ringactor/runtime/internal/telemetry"
)

// newTelemetry registers the pipeline's spans and metrics
// (internal/telemetry), once its stages are made.
func (p *Pipeline) newTelemetry() (*telemetry.Pipeline, error) {
	ts := make([]telemetry.Stage, len(p.stages))
	for i, s := range p.stages {
		ts[i] = telemetry.Stage{Name: s.spec.Name, Device: s.spec.Device, Fanout: s.fanout()}
	}
	status := func(i int) (rk.Status, bool) { // a collection may come while Build launches them
		if !p.launched.Load() {
			return rk.Status{}, false
		}
		return p.stages[i].kernel.Status(), true
	}
	account := func() meter.Account {
		a := p.account()
		return meter.Account{Sent: a.Sent, Delivered: a.Delivered, DeadLettered: a.DeadLettered, InFlight: a.InFlight}
	}
	return telemetry.New(p.rt.tp, p.rt.mp, p.spec.Name, ts, status, account)
}

// traceEnd ends one copy of message id in its trace: delivered (dead nil)
// or dead-lettered, from stage id from (0: the host).
func (p *Pipeline) traceEnd(id uint64, from uint32, when time.Time, dead *DeadLetter) {
	var d *spans.Death
	if dead != nil {
		d = &spans.Death{Stage: dead.Stage, Reason: dead.Reason.String()}
	}
	p.tele.End(id, from, when, d)
}
