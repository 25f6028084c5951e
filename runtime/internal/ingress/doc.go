// Package ingress is the host's end of a stage's ingress link (its
// device mailbox): it puts a batch of messages into the link, each
// exactly once, sent or refused with a reason.
//
// Every message is counted into the pipeline's account (Sent) once,
// before it is published or refused: it is then either written into a
// slot (the stage ends it later: delivered or dead-lettered) or
// dead-lettered here, through the Dead hook, with the reason and error
// that kept it out: the link refuses sends (the pipeline is closing,
// faulted, or the stage stopped: the owner's Refusal says which), the
// mailbox is full under Reject, the sender's ctx ended while it waited
// for room under Block, the stage's kernel has ended, the queue refused
// the write, or the message does not encode (too large, the wrong
// type). So Sent = Delivered + DeadLettered + InFlight holds whatever
// Send returns, and Send's count of messages taken plus those
// dead-lettered here is always the batch.
//
// A Link is generic in the message type M and the dead-letter reason R:
// the runtime passes its Data and Reason in, with hooks that read a
// message's id, encode its payload (package msgtype), start its trace
// and dead-letter it. The hooks take messages by value, so that a batch
// the sender made on its stack stays there: Send makes no allocation per
// message.
//
// Send is safe for concurrent use: one sender writes the link at a time,
// and Close waits for it.
package ingress
