// Package egress is where a pipeline's results leave it: a pump per exit
// stage (Pump) takes the results off the exit's egress link in batches,
// decodes them straight from the slots (the results of one batch share
// one allocation), and hands each to the pipeline's sink (Sink: a
// callback, a channel, or a PID), or a whole batch undecoded to a slots
// sink; once told to stop it sweeps what is left in the link, so results
// that passed their last stage are not lost.
//
// It keeps the account's rules for results (package account): a result
// counts as delivered before it is handed over, so whoever receives it
// finds it counted; one the sink never takes (a Chan not read by the end
// of Close, after CloseWait) moves to the dead, and so does one on which
// the sink's Func panicked (the panic is recovered and the pump goes
// on); one that does not decode is dead at once. A full Chan holds the
// pump up while the pipeline runs (backpressure).
//
// It is generic in the result's type, and what is the pipeline's own
// (making a result, answering a request, telling a dead letter's
// subscribers, ending a trace) it asks of a Host; it sends to a PID
// through the actor system's send, handed in. Package runtime keeps
// Sink, Result, DeadLetter and their docs, and is the Host.
package egress
