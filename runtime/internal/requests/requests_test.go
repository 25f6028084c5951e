package requests

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// A request's outcome goes to its waiter, by id, once; an id no request
// holds is not found; an id in flight is refused a second time, and free
// again once answered.
func TestAnswerByID(t *testing.T) {
	var tb Table[string]
	if tb.Pending() {
		t.Fatal("an empty table has requests pending")
	}
	if found, _ := tb.Answer(1, "x"); found {
		t.Fatal("an empty table found a request")
	}
	var got []string
	if err := tb.Add(7, func(o string) { got = append(got, o) }); err != nil {
		t.Fatal(err)
	}
	c, err := tb.Call(8)
	if err != nil {
		t.Fatal(err)
	}
	err = tb.Add(7, func(string) {})
	if err == nil || !strings.Contains(err.Error(), "a request with message id 7 is already in flight; give each request its own id, or 0 for the next") {
		t.Fatalf("a second request with id 7: %v", err)
	}
	if _, err := tb.Call(8); err == nil {
		t.Fatal("a second call with id 8 was accepted")
	}
	if !tb.Pending() {
		t.Fatal("no request pending")
	}
	if found, ab := tb.Answer(9, "nine"); found || ab {
		t.Fatal("id 9 is no request")
	}
	if found, ab := tb.Answer(7, "seven"); !found || ab || len(got) != 1 || got[0] != "seven" {
		t.Fatalf("answer 7: found %v, abandoned %v, got %v", found, ab, got)
	}
	if found, _ := tb.Answer(7, "again"); found || len(got) != 1 {
		t.Fatal("a request was answered twice")
	}
	if found, ab := tb.Answer(8, "eight"); !found || ab {
		t.Fatal("answer 8")
	}
	if o := <-c.Done(); o != "eight" {
		t.Fatalf("call 8 got %q", o)
	}
	if tb.Pending() {
		t.Fatal("requests pending after all were answered")
	}
	if err := tb.Add(7, func(string) {}); err != nil {
		t.Fatalf("id 7 again, once answered: %v", err)
	}
}

// A caller that gives up before the outcome comes abandons the request:
// its outcome is dropped and reported abandoned, once. One that gives up
// after it came (or after it failed to send, and the outcome, a dead
// letter, came on the way in) gets it.
func TestGiveUp(t *testing.T) {
	var tb Table[int]
	c, _ := tb.Call(1)
	if _, ok := c.GiveUp(); ok {
		t.Fatal("gave up before any outcome, and got one")
	}
	if !tb.Pending() {
		t.Fatal("an abandoned request is still in flight until its outcome comes")
	}
	if found, ab := tb.Answer(1, 10); !found || !ab {
		t.Fatalf("the abandoned request's outcome: found %v, abandoned %v", found, ab)
	}
	select {
	case o := <-c.Done():
		t.Fatalf("an abandoned call received %d", o)
	default:
	}
	if tb.Pending() {
		t.Fatal("still pending")
	}

	c, _ = tb.Call(2)
	tb.Answer(2, 20)
	if o, ok := c.GiveUp(); !ok || o != 20 {
		t.Fatalf("gave up after the outcome came: %d, %v", o, ok)
	}
}

// The race's window, held open: Answer has taken the waiter (so the
// request can no longer be abandoned) but not yet handed the outcome
// over. A requester giving up then waits for the outcome and gets it;
// it is not dropped.
func TestGiveUpWhileAnswerHandsOver(t *testing.T) {
	var tb Table[int]
	c, _ := tb.Call(3)
	w, ok := tb.take(3, 30) // Answer's first half
	if !ok || tb.Pending() {
		t.Fatal("take")
	}
	got := make(chan int)
	go func() {
		o, ok := c.GiveUp()
		if !ok {
			t.Error("gave up while the outcome was being handed over, and lost it")
		}
		got <- o
	}()
	select {
	case o := <-got:
		t.Fatalf("GiveUp returned %d before the outcome was handed over", o)
	case <-time.After(20 * time.Millisecond):
	}
	w.to(30) // Answer's second half
	if o := <-got; o != 30 {
		t.Fatalf("got %d", o)
	}
}

// An answer racing a requester that gives up: exactly one side has the
// outcome, the requester (GiveUp ok) or the answerer (abandoned), never
// both and never neither.
func TestAnswerRacesGiveUp(t *testing.T) {
	var tb Table[int]
	const n = 5000
	var given, dropped int
	for i := range n {
		id := uint64(i + 1)
		c, err := tb.Call(id)
		if err != nil {
			t.Fatal(err)
		}
		var ab bool
		done := make(chan struct{})
		go func() {
			defer close(done)
			var found bool
			found, ab = tb.Answer(id, i)
			if !found {
				t.Errorf("request %d not found", id)
			}
		}()
		if i%2 == 0 {
			runtime.Gosched() // now the answer first, now the requester
		}
		o, ok := c.GiveUp()
		<-done
		switch {
		case ok && ab:
			t.Fatalf("request %d: the requester got %d and the answer was dropped too", id, o)
		case !ok && !ab:
			t.Fatalf("request %d: neither the requester nor the answerer had it", id)
		case ok && o != i:
			t.Fatalf("request %d: got %d", id, o)
		case ok:
			given++
		default:
			dropped++
		}
	}
	if tb.Pending() {
		t.Fatal("requests left in the table")
	}
	t.Logf("%d races: %d answered first, %d abandoned first", n, given, dropped)
}

// Many requesters and answerers at once: every outcome reaches its own
// requester.
func TestConcurrentCalls(t *testing.T) {
	var tb Table[uint64]
	const callers, each = 8, 500
	var wg sync.WaitGroup
	for c := range callers {
		wg.Go(func() {
			for i := range each {
				id := uint64(c*each + i + 1)
				call, err := tb.Call(id)
				if err != nil {
					t.Error(err)
					return
				}
				go tb.Answer(id, id*2)
				if o := <-call.Done(); o != id*2 {
					t.Errorf("request %d got %d", id, o)
					return
				}
			}
		})
	}
	wg.Wait()
	if tb.Pending() {
		t.Fatal("requests left in the table")
	}
}

// A waiter that takes only some outcomes: the others are not found (they
// go their usual way) and leave it in flight, also once abandoned; the
// first it takes answers it.
func TestCallIfTakesOnlyWhatItAccepts(t *testing.T) {
	var tb Table[int]
	var refused []int
	even := func(o int) bool {
		if o%2 == 0 {
			return true
		}
		refused = append(refused, o)
		return false
	}
	c, err := tb.CallIf(5, even)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range []int{1, 3} {
		if found, ab := tb.Answer(5, o); found || ab {
			t.Fatalf("outcome %d, refused, was found (%v) or abandoned (%v)", o, found, ab)
		}
	}
	if !tb.Pending() {
		t.Fatal("a refused outcome ended the request")
	}
	if found, ab := tb.Answer(5, 4); !found || ab {
		t.Fatalf("outcome 4: found %v, abandoned %v", found, ab)
	}
	if o := <-c.Done(); o != 4 || len(refused) != 2 {
		t.Fatalf("got %d, refused %v", o, refused)
	}
	// Abandoned: an accepted outcome is dropped and counted.
	c, _ = tb.CallIf(6, even)
	if _, ok := c.GiveUp(); ok {
		t.Fatal("gave up before any outcome, and got one")
	}
	n := 0
	if !tb.Settle(6, 8, func() { n++ }) || n != 1 || tb.Pending() {
		t.Fatalf("the accepted outcome of an abandoned request: counted %d times, pending %v", n, tb.Pending())
	}
	// Abandoned: a refused outcome goes its way and ends the request, so
	// the table keeps no entry for a type that may never come; a later
	// copy goes its usual way too.
	c, _ = tb.CallIf(9, even)
	if _, ok := c.GiveUp(); ok {
		t.Fatal("gave up before any outcome, and got one")
	}
	if found, _ := tb.Answer(9, 7); found {
		t.Fatal("an abandoned waiter took an outcome it refuses")
	}
	if tb.Pending() || len(tb.m) != 0 {
		t.Fatalf("an abandoned request that refused an outcome is still kept: pending %v, %d entries", tb.Pending(), len(tb.m))
	}
	if tb.Settle(9, 10, func() { n++ }) || n != 1 {
		t.Fatalf("a copy after the request ended was taken as its outcome (counted %d)", n)
	}
}

// Do: an id in flight wraps notSent; a failed send returns its error; an
// outcome answers; ctx's end gives up with ctx's error.
func TestDo(t *testing.T) {
	var tb Table[int]
	notSent := errors.New("not sent")
	_, _ = tb.Call(1)
	if _, err := tb.Do(context.Background(), 1, nil, notSent, func() error { return nil }); !errors.Is(err, notSent) {
		t.Fatalf("an id in flight: %v", err)
	}
	boom := errors.New("boom")
	if _, err := tb.Do(context.Background(), 2, nil, notSent, func() error { return boom }); !errors.Is(err, boom) || errors.Is(err, notSent) {
		t.Fatalf("a failed send: %v", err)
	}
	o, err := tb.Do(context.Background(), 3, nil, notSent, func() error {
		go tb.Answer(3, 33)
		return nil
	})
	if err != nil || o != 33 {
		t.Fatalf("answered: %d, %v", o, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	_, err = tb.Do(ctx, 4, nil, notSent, func() error { cancel(); return nil })
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "request 4: gave up waiting") {
		t.Fatalf("ctx ended: %v", err)
	}
}
