package requests

import (
	"context"
	"errors"
	"testing"
)

// Await: an answer during send or after it is the outcome; an id in
// flight is refused without a send; a failed send with no answer returns
// its error; a ctx that ends first abandons the request, so its outcome,
// when it comes, is reported abandoned.
func TestAwait(t *testing.T) {
	var tb Table[string]
	ctx := context.Background()
	o, ok, err := tb.Await(ctx, 1, func() error { tb.Answer(1, "during"); return nil })
	if !ok || err != nil || o != "during" {
		t.Fatalf("answered during send: %q %v %v", o, ok, err)
	}
	o, ok, err = tb.Await(ctx, 2, func() error { tb.Answer(2, "dead"); return errors.New("refused") })
	if !ok || err != nil || o != "dead" {
		t.Fatalf("failed send, answered (a dead letter on the way in): %q %v %v", o, ok, err)
	}
	sendErr := errors.New("not sent")
	if _, ok, err = tb.Await(ctx, 3, func() error { return sendErr }); ok || !errors.Is(err, sendErr) {
		t.Fatalf("failed send, no answer: %v %v", ok, err)
	}

	release := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, _, err := tb.Await(ctx, 4, func() error { close(release); return nil })
		done <- err
	}()
	<-release
	sent := false
	if _, ok, err = tb.Await(ctx, 4, func() error { sent = true; return nil }); ok || !errors.Is(err, ErrInFlight) || sent {
		t.Fatalf("an id in flight: %v %v, sent %v; want ErrInFlight and no send", ok, err, sent)
	}
	tb.Answer(4, "late")
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	cctx, cancel := context.WithCancel(ctx)
	if _, ok, err = tb.Await(cctx, 5, func() error { cancel(); return nil }); ok || !errors.Is(err, context.Canceled) {
		t.Fatalf("ctx ended: %v %v", ok, err)
	}
	if found, abandoned := tb.Answer(5, "too late"); !found || !abandoned {
		t.Fatalf("the outcome of a request given up on: found %v abandoned %v", found, abandoned)
	}
}
