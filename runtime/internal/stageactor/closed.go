package stageactor

import (
	"github.com/asynkron/protoactor-go/actor"

	"github.com/ringactor/ringactor/runtime/internal/account"
)

// Closed is what is kept of a stage whose pipeline has closed (Retire):
// enough to count the data sent to its PID afterwards into the pipeline's
// account and dead-letter it with the reason (a few hundred bytes,
// against the stage's megabytes).
type Closed[D any] struct {
	Acct *account.Account
	// Refuse dead-letters message id, counted already; sender, when not
	// nil, sent it as a request and is told why.
	Refuse func(id uint64, sender *actor.PID)
}

// deadLetter counts and dead-letters data that reached the closed stage's
// PID. Only a single message is a request.
func (c *Closed[D]) deadLetter(p *Protocol[D], ds []D, sender *actor.PID) {
	if len(ds) != 1 {
		sender = nil
	}
	for _, d := range ds {
		c.Acct.Enter(1)
		id := c.Acct.ID(p.ID(d))
		c.Acct.DeadLetter()
		c.Refuse(id, sender)
	}
}
