package ringkernel

import (
	"errors"
	"fmt"
)

// State is where a ring kernel is in its life. The values are stored in the
// control block, so they are part of the layout shared with device code.
type State uint32

const (
	// Launched: the loop runs but does not take messages until activated.
	Launched State = 1 + iota
	// Active: the loop takes messages and runs the stage.
	Active
	// Idle: deactivated; messages queue in the in-links until reactivated.
	Idle
	// Terminating: asked to stop; draining if asked to.
	Terminating
	// Terminated: the loop has ended. Final.
	Terminated
	// Faulted: the loop ended on an error it could not recover from. Final.
	Faulted
)

func (s State) String() string {
	switch s {
	case Launched:
		return "launched"
	case Active:
		return "active"
	case Idle:
		return "idle"
	case Terminating:
		return "terminating"
	case Terminated:
		return "terminated"
	case Faulted:
		return "faulted"
	}
	return fmt.Sprintf("State(%d)", uint32(s))
}

// Running reports whether the loop is still running in state s.
func (s State) Running() bool { return s == Launched || s == Active || s == Idle || s == Terminating }

// Command is what the host asks of a kernel through the control block.
type Command uint32

const (
	CmdNone Command = iota
	CmdActivate
	CmdDeactivate
	CmdTerminate      // stop now; queued messages are dead-lettered
	CmdTerminateDrain // stop after the in-links are closed and drained
	// CmdSteal forwards up to n queued messages to the thief at StealTo[i]
	// (argument n | i<<32); the kernel stays its queue's only consumer.
	CmdSteal
	// CmdBarrier: arrive at a flag-array barrier (package barrier) once
	// an in-link's consumed count reaches a mark, taking no message past
	// it, then wait there, taking no message, until every participant
	// has arrived; parameters at CtrlOffBarrier* (Kernel.ArriveAt).
	CmdBarrier
)

func (c Command) String() string {
	switch c {
	case CmdNone:
		return "none"
	case CmdActivate:
		return "activate"
	case CmdDeactivate:
		return "deactivate"
	case CmdTerminate:
		return "terminate"
	case CmdTerminateDrain:
		return "terminate (drain)"
	case CmdSteal:
		return "steal"
	case CmdBarrier:
		return "barrier"
	}
	return fmt.Sprintf("Command(%d)", uint32(c))
}

// ErrTransition: the command is not valid in the kernel's current state.
var ErrTransition = errors.New("ringkernel: invalid lifecycle transition")

// Next is the lifecycle: the state a kernel in s moves to on c, or an error
// wrapping ErrTransition naming both. It is pure, so host and tests share it;
// device code implements the same table.
func Next(s State, c Command) (State, error) {
	switch c {
	case CmdActivate:
		if s == Launched || s == Idle {
			return Active, nil
		}
	case CmdDeactivate:
		if s == Active {
			return Idle, nil
		}
	case CmdTerminate, CmdTerminateDrain:
		if s.Running() {
			return Terminating, nil
		}
	case CmdSteal:
		if s == Launched || s == Active || s == Idle {
			return s, nil // work moves; the state does not
		}
	case CmdBarrier:
		if s == Launched || s == Active || s == Idle {
			return s, nil // a phase boundary: the state does not move
		}
	}
	return s, fmt.Errorf("%w: cannot %s a kernel that is %s", ErrTransition, c, s)
}
