package gate

import (
	"testing"
	"time"
)

// A closed gate holds Pass until it is opened; an open one does not.
func TestGateHoldsUntilOpened(t *testing.T) {
	var g Gate
	g.Pass() // open: returns at once
	open := g.Close()
	passed := make(chan struct{})
	go func() { g.Pass(); close(passed) }()
	select {
	case <-passed:
		t.Fatal("passed a closed gate")
	case <-time.After(20 * time.Millisecond): // a pass that should not happen; no timing is asserted on success
	}
	open()
	open() // twice: nothing
	<-passed
	g.Pass()
	var none *Gate
	none.Pass()
}
