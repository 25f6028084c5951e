package runtime

import (
	"errors"
	"sync"
	"time"

	"github.com/ringactor/ringactor/kernels"
	"github.com/ringactor/ringactor/p2pqueue"
)

// startPumps starts a pump per exit stage; pumpDone closes when all have
// ended.
func (p *Pipeline) startPumps() {
	var wg sync.WaitGroup
	for _, s := range p.exits {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.pump(s)
		}()
	}
	go func() {
		wg.Wait()
		close(p.pumpDone)
	}()
}

// pump delivers exit stage s's results from its egress link until the
// link is closed. It decodes straight from the slots, and the results of
// one batch share one allocation.
func (p *Pipeline) pump(s *stage) {
	for {
		p.rt.pumpStall.Pass()
		n, err := s.egress.c.PeekWait(p.pumpCtx, egressBatch)
		if n > 0 && !p.deliverPeeked(s, n) {
			return
		}
		if err != nil {
			if p.pumpCtx.Err() != nil && !errors.Is(err, p2pqueue.ErrClosed) {
				p.sweep(s)
			}
			return
		}
	}
}

// sweep delivers what is left in s's egress link when the pump is told to
// stop: results that already passed their last stage are not lost.
func (p *Pipeline) sweep(s *stage) {
	for {
		n, err := s.egress.c.Peek(egressBatch)
		if err != nil || n == 0 || !p.deliverPeeked(s, n) {
			return
		}
	}
}

// egressBatch is the most results a pump takes at a time.
const egressBatch = 64

// deliverPeeked delivers the n peeked messages of exit s's egress,
// decoded straight from their slots into one allocation, and releases
// them. It reports false if the link is corrupt. Only s's pump calls it.
func (p *Pipeline) deliverPeeked(s *stage, n int) bool {
	var (
		hs    [egressBatch]p2pqueue.Header
		ps    [egressBatch][]byte
		errs  [egressBatch]error
		total int       // floats
		typed int       // bytes of typed results
		now   time.Time // read once a batch, and only for a sampled message
	)
	eg := s.egress.c
	for i := range n {
		hs[i], ps[i], errs[i] = eg.Read(i)
		if hs[i].Type == kernels.TypeFloats {
			total += len(ps[i]) / 4
		} else {
			typed += len(ps[i])
		}
	}
	if p.spec.Deliver.slots != nil {
		return p.forwardPeeked(s, hs[:n], ps[:n], errs[:n])
	}
	slab := make([]float32, total)
	var bslab []byte
	if typed > 0 {
		bslab = make([]byte, typed)
	}
	for i := range n {
		h, err := &hs[i], errs[i]
		var v []float32
		var b []byte
		switch {
		case err != nil:
		case h.Type == kernels.TypeFloats:
			k := len(ps[i]) / 4
			v, err = kernels.DecodeFloats(slab[:k:k], ps[i])
			slab = slab[k:]
		default:
			k := len(ps[i])
			b = bslab[:k:k]
			copy(b, ps[i])
			bslab = bslab[k:]
		}
		if err != nil {
			p.deadLetter(s.id(), DeadLetter{ID: h.ID, Stage: "egress", Device: p2pqueue.Host, Reason: ReasonDecodeError, Err: err})
			continue
		}
		// Counted before it is handed over, so that whoever receives it
		// finds it counted; one a Chan sink never takes moves to the dead.
		p.acct.Deliver(1)
		r := Result{ID: h.ID, Type: h.Type, Floats: v, Bytes: b, Stage: s.spec.Name}
		if !p.reqs.Pending() || !p.answer(h.ID, outcome{r: r}) {
			if reason, err := p.handOver(r); err != nil {
				p.undeliver(s.id(), DeadLetter{ID: h.ID, Stage: "egress", Device: p2pqueue.Host, Reason: reason, Err: err})
				continue
			}
		}
		if h.Flags&p2pqueue.FlagSampled != 0 {
			if now.IsZero() {
				now = time.Now()
			}
			p.tele.end(h.ID, s.id(), now, nil)
		}
	}
	return eg.Release(n) == nil
}

// forwardPeeked hands the good messages of a peeked batch to the spec's
// slots sink, in place, then releases them.
func (p *Pipeline) forwardPeeked(s *stage, hs []p2pqueue.Header, ps [][]byte, errs []error) bool {
	k := 0
	for i := range hs {
		if errs[i] != nil {
			p.deadLetter(s.id(), DeadLetter{ID: hs[i].ID, Stage: "egress", Device: p2pqueue.Host, Reason: ReasonDecodeError, Err: errs[i]})
			continue
		}
		hs[k], ps[k] = hs[i], ps[i]
		k++
	}
	p.acct.Deliver(k)
	p.spec.Deliver.slots(p.pumpCtx, hs[:k], ps[:k])
	return s.egress.c.Release(len(hs)) == nil
}

// id is the stage's id: its index in the spec plus one (0 is the host),
// written as Origin into what its kernel emits.
func (s *stage) id() uint32 { return uint32(s.idx + 1) }
