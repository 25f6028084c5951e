package egress

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// Sink is where results go: one of Func, Chan, PID (runtime.Sink
// documents each).
type Sink[R any] struct {
	Func func(R)
	Chan chan<- R
	PID  *actor.PID
	// Batch takes an exit's results a batch at a time, lent: their
	// payloads view the link's slots and the slice is the pump's, both
	// valid only until Batch returns (Pump.lend).
	Batch func([]R)
	// CloseWait bounds how long a Pump waits, once Close has begun, for
	// a Chan that takes nothing (not above 0: DefaultCloseWait).
	CloseWait time.Duration
}

// DefaultCloseWait is Sink.CloseWait's default (runtime's).
const DefaultCloseWait = time.Second

// closeWait is s.CloseWait, or its default.
func (s *Sink[R]) closeWait() time.Duration {
	if s.CloseWait <= 0 {
		return DefaultCloseWait
	}
	return s.CloseWait
}

// Count is how many of Func, Chan and PID s sets, plus one for a slots
// sink beside them (slots).
func (s Sink[R]) Count(slots bool) int {
	n := 0
	for _, set := range []bool{s.Func != nil, s.Chan != nil, s.PID != nil, s.Batch != nil, slots} {
		if set {
			n++
		}
	}
	return n
}

// Check returns an error when s cannot take results handed to it one at
// a time, as To hands them (a stage group's sink, a cluster pipeline's):
// when it names more than one of Func, Chan and PID, or is a Batch or a
// slots sink (slots), which take egress batches that only a pipeline's
// own Pump has. The zero Sink passes (results are discarded).
func (s Sink[R]) Check(slots bool) error {
	if n := s.Count(slots); n > 1 {
		return fmt.Errorf("Deliver names %d sinks; set one of Func, Chan, PID", n)
	}
	if s.Batch != nil {
		return errors.New("a Batch sink takes a pipeline's egress batches, and these results arrive one at a time; set Func, Chan or PID")
	}
	if slots {
		return errors.New("a slots sink takes a pipeline's raw egress batches, and these results arrive one at a time, decoded; set Func, Chan or PID")
	}
	return nil
}

// To hands r to s as a pipeline's egress does, without its recovery or
// its CloseWait: to Func, to Chan (giving up when done ends), or to PID
// through send (the actor system's). The zero Sink drops r.
func (s Sink[R]) To(done context.Context, r R, send func(pid *actor.PID, msg any)) {
	switch {
	case s.Func != nil:
		s.Func(r)
	case s.Chan != nil:
		select {
		case s.Chan <- r:
		case <-done.Done():
		}
	case s.PID != nil:
		send(s.PID, r)
	}
}
