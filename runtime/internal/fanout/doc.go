// Package fanout hands a pipeline's dead letters to the subscribers its
// spec names (Fanout: a callback, a channel, a PID, in that order), and
// calls a user's callback so that a panic in it is recovered (Call): the
// runtime's goroutine that called it (a stage's record pump, a sender,
// an egress pump, the watchdog) goes on.
//
// It is generic in the dead letter's type, and sends to a PID through
// the actor system's send, handed in; it publishes nothing itself.
// Package runtime keeps DeadLetter and CallbackPanicked, builds a
// Fanout per pipeline, and publishes a recovered panic as a
// CallbackPanicked on its actor system's event stream.
package fanout
