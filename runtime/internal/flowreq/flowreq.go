package flowreq

import (
	"context"
	"errors"
	"fmt"

	ra "github.com/ringactor/ringactor/runtime"
	"github.com/ringactor/ringactor/runtime/internal/account"
	"github.com/ringactor/ringactor/runtime/internal/requests"
)

// Outcome is how a request's message ended: a result, or a dead letter.
type Outcome struct {
	R    ra.Result
	Dead *ra.DeadLetter
}

// Result is the outcome as Request returns it.
func (o Outcome) Result() (ra.Result, error) {
	if o.Dead != nil {
		return ra.Result{}, &ra.RequestError{Dead: *o.Dead}
	}
	return o.R, nil
}

// Request sends d with send and waits in reqs for its outcome, as
// runtime.Pipeline.Request does: d.ID 0 takes acct's next id; an id
// already in flight is refused wrapping ErrNotSent; ctx's end abandons
// the wait (the outcome, when it comes, is counted Abandoned by Answer).
// what names the flow in errors ("group \"g\"").
func Request(ctx context.Context, what string, acct *account.Account, reqs *requests.Table[Outcome], d ra.Data, send func(ra.Data) error) (ra.Result, error) {
	if d.ID == 0 {
		d.ID = acct.ID(0)
	}
	o, ok, err := reqs.Await(ctx, d.ID, func() error { return send(d) })
	switch {
	case ok:
		return o.Result()
	case errors.Is(err, requests.ErrInFlight):
		return ra.Result{}, fmt.Errorf("%w: %w", ra.ErrNotSent, err)
	}
	return ra.Result{}, fmt.Errorf("ringactor: %s: request %d: %w", what, d.ID, err)
}

// Answer hands a request's outcome to its waiter (an abandoned one's is
// counted in acct and dropped); false when id is no request.
func Answer(acct *account.Account, reqs *requests.Table[Outcome], id uint64, o Outcome) bool {
	found, abandoned := reqs.Answer(id, o)
	if abandoned {
		acct.Abandon()
	}
	return found
}
