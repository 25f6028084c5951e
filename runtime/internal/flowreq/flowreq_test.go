package flowreq

import (
	"context"
	"errors"
	"testing"

	ra "github.com/ringactor/ringactor/runtime"
	"github.com/ringactor/ringactor/runtime/internal/account"
	"github.com/ringactor/ringactor/runtime/internal/requests"
)

// A request gets the account's next id, its result or its dead letter as
// a *RequestError; an id in flight is refused as not sent; a request whose
// ctx ended is abandoned, and its outcome, when it comes, counted so.
func TestRequest(t *testing.T) {
	var acct account.Account
	var reqs requests.Table[Outcome]
	ctx := context.Background()
	answer := func(o Outcome) func(ra.Data) error {
		return func(d ra.Data) error {
			if d.ID == 0 {
				t.Fatal("sent without an id")
			}
			o.R.ID = d.ID
			Answer(&acct, &reqs, d.ID, o)
			return nil
		}
	}
	r, err := Request(ctx, "flow", &acct, &reqs, ra.Data{Floats: []float32{1}}, answer(Outcome{R: ra.Result{Floats: []float32{2}}}))
	if err != nil || r.ID == 0 || len(r.Floats) != 1 || r.Floats[0] != 2 {
		t.Fatalf("result %+v, %v", r, err)
	}
	_, err = Request(ctx, "flow", &acct, &reqs, ra.Data{ID: 7}, answer(Outcome{Dead: &ra.DeadLetter{ID: 7, Reason: ra.ReasonRouteError}}))
	var re *ra.RequestError
	if !errors.As(err, &re) || !errors.Is(err, ra.ErrDeadLettered) || re.Dead.ID != 7 {
		t.Fatalf("dead letter: %v, want a *RequestError for message 7", err)
	}

	sent := make(chan struct{})
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := Request(cctx, "flow", &acct, &reqs, ra.Data{ID: 9}, func(ra.Data) error { close(sent); return nil })
		done <- err
	}()
	<-sent
	if _, err := Request(ctx, "flow", &acct, &reqs, ra.Data{ID: 9}, func(ra.Data) error { t.Fatal("sent twice"); return nil }); !errors.Is(err, ra.ErrNotSent) {
		t.Fatalf("an id in flight: %v, want ErrNotSent", err)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled request: %v, want context.Canceled", err)
	}
	if found := Answer(&acct, &reqs, 9, Outcome{}); acct.Read(nil).Abandoned != 1 {
		t.Fatalf("the abandoned request's outcome: found %v, %+v abandoned", found, acct.Read(nil))
	}
	if Answer(&acct, &reqs, 10, Outcome{}) {
		t.Fatal("an answer for no request was taken")
	}
}
