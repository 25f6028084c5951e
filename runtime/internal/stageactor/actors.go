package stageactor

import (
	"sync"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/eventstream"
)

// Actors is the stage actors of one actor system: it spawns them, and
// takes the data sent to their PIDs after they stopped (orphans).
type Actors[D any] struct {
	sys *actor.ActorSystem
	p   *Protocol[D]
	sub *eventstream.Subscription
	// pids maps a stage actor's PID id to its Stage, or once its pipeline
	// has closed to its *Closed: the last pipeline built under a name
	// keeps its entries until Close.
	pids sync.Map
}

// New watches sys's dead letters for data sent to stopped stage actors.
// Close stops watching.
func New[D any](sys *actor.ActorSystem, p *Protocol[D]) *Actors[D] {
	a := &Actors[D]{sys: sys, p: p}
	a.sub = sys.EventStream.Subscribe(a.orphan)
	return a
}

// Spawn starts stage s's actor under name, its kernel k, with a mailbox
// that posts data into s. The PID and error are SpawnNamed's.
func (a *Actors[D]) Spawn(name string, s Stage[D], k Kernel) (*actor.PID, error) {
	props := actor.PropsFromProducer(func() actor.Actor { return &stageActor[D]{p: a.p, s: s, k: k} },
		actor.WithMailbox(func() actor.Mailbox { return &mailbox[D]{Mailbox: actor.Unbounded()(), p: a.p, s: s} }))
	pid, err := a.sys.Root.SpawnNamed(props, name)
	if err == nil {
		a.pids.Store(pid.Id, s)
	}
	return pid, err
}

// Retire replaces stage s, the actor at pid, with c for data sent there
// from now on: the stage itself, with its links, kernel and buffers, is
// not kept for as long as the actor system lives. It does nothing if a
// later stage has taken the PID.
func (a *Actors[D]) Retire(pid *actor.PID, s Stage[D], c *Closed[D]) {
	a.pids.CompareAndSwap(pid.Id, s, c)
}

// Forget drops stage s, the actor at pid, from the orphans' map, for a
// stage whose pipeline never finished its build: its PID is no stage's
// once the build is undone. It does nothing if a later stage took the id.
func (a *Actors[D]) Forget(pid *actor.PID, s Stage[D]) { a.pids.CompareAndDelete(pid.Id, s) }

// Len is how many stage PIDs the map holds (a stage, or a closed one).
func (a *Actors[D]) Len() int {
	n := 0
	a.pids.Range(func(any, any) bool { n++; return true })
	return n
}

// Close stops taking orphans.
func (a *Actors[D]) Close() { a.sys.EventStream.Unsubscribe(a.sub) }

// orphan takes data sent to a stage PID whose actor has stopped:
// protoactor hands such messages to its dead-letter process, which
// publishes them on the event stream in the sender's goroutine. The stage
// refuses them as its mailbox would, so each is counted and dead-lettered
// with the reason.
func (a *Actors[D]) orphan(evt any) {
	e, ok := evt.(*actor.DeadLetterEvent)
	if !ok || e.PID == nil || e.PID.Address != a.sys.Address() || a.p.control(e.Message) {
		return
	}
	v, ok := a.pids.Load(e.PID.Id)
	if !ok {
		return
	}
	switch s := v.(type) {
	case *Closed[D]:
		s.deadLetter(a.p, a.p.data(e.Message), e.Sender)
	case Stage[D]:
		s.Shut() // its actor is gone: nothing more goes in
		post(a.p, s, e.Message, e.Sender)
	}
}
