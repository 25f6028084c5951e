package stageactor

import "github.com/asynkron/protoactor-go/actor"

// Op is what a control message asks of a stage.
type Op int

const (
	// None: a control message the actor takes and does not act on (a
	// StageFaulted, say): it never reaches the kernel.
	None Op = iota
	Activate
	Deactivate
	Stop
	Stats
	Steal
)

// Command is a control message as the actor reads it.
type Command struct {
	Op    Op
	Drain bool // Stop's: drain first
	N, To int  // Steal's: how many, to which thief
}

// Protocol is the shape of the messages a stage is sent: runtime's types,
// read and made through these. One Protocol serves every stage.
type Protocol[D any] struct {
	// Command reads a control message; false when msg is not one (then it
	// is data for the kernel).
	Command func(msg any) (Command, bool)
	// Value makes a data message of a bare value sent to a stage's PID
	// (one of a registered type, or refused as the stage's Post decides).
	Value func(v any) D
	// Stolen is the answer to a Steal: how many messages moved.
	Stolen func(moved int, err error) any
	// ID is a data message's own id (0: the pipeline picks one).
	ID func(d D) uint64
}

// control reports whether msg, sent to a stage's PID, is for its actor's
// Receive (a control message, or protoactor's own) rather than data for
// its kernel.
func (p *Protocol[D]) control(msg any) bool {
	switch msg.(type) {
	case actor.AutoReceiveMessage, actor.SystemMessage, actor.MailboxMessage, actor.InfrastructureMessage, actor.AutoRespond:
		return true
	}
	_, ok := p.Command(msg)
	return ok
}

// data is the data messages in msg: a D, a *D, a []D, or else a bare
// value made one by Value.
func (p *Protocol[D]) data(msg any) []D {
	switch d := msg.(type) {
	case *D:
		return []D{*d}
	case D:
		return []D{d}
	case []D:
		return d
	}
	return []D{p.Value(msg)}
}
