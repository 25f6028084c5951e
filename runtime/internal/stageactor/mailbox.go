package stageactor

import "github.com/asynkron/protoactor-go/actor"

// mailbox is a stage actor's mailbox: data messages go straight into the
// kernel's ingress (Stage.Post); everything else (control messages,
// system messages) goes through an ordinary mailbox to Receive.
type mailbox[D any] struct {
	actor.Mailbox
	p *Protocol[D]
	s Stage[D]
}

func (m *mailbox[D]) PostUserMessage(msg any) {
	// The common case first, with no allocation: one D, no envelope. It
	// is copied into the device mailbox here, so a sender may reuse a *D
	// once Send returns.
	switch d := msg.(type) {
	case D:
		m.s.Post(d)
		return
	case *D:
		m.s.Post(*d)
		return
	}
	body, sender := msg, (*actor.PID)(nil)
	if env, ok := msg.(*actor.MessageEnvelope); ok {
		body, sender = env.Message, env.Sender
	}
	if m.p.control(body) {
		m.Mailbox.PostUserMessage(msg)
		return
	}
	post(m.p, m.s, body, sender)
}

// UserMessageCount counts the control messages waiting and the data
// messages queued in the device mailbox.
func (m *mailbox[D]) UserMessageCount() int {
	return m.Mailbox.UserMessageCount() + m.s.Queued()
}

// post sends data that reached the stage's PID (from sender, when it is a
// request) into its ingress: a D, a []D, or a bare value (the stage
// refuses one it does not take). Errors are dead letters: a PID send has
// no caller to return one to.
func post[D any](p *Protocol[D], s Stage[D], body any, sender *actor.PID) {
	ds := p.data(body)
	if sender != nil && len(ds) == 1 {
		// A request (RequestFuture): the sender gets the result, or is
		// told why not.
		r, ok := s.Request(ds[0], sender)
		if !ok {
			return
		}
		ds = []D{r}
	}
	s.PostAll(ds)
}
