// Package group runs one stage on several devices behind one PID: a stage
// group. It builds on package runtime's exported API: each instance is a
// one-stage runtime.Pipeline. The steal links between instances are made
// and handed to the pipelines' specs through runtime's hooks for its
// sub-packages (runtime/internal/ext).
//
// New builds and starts a group whose messages are split by a Policy:
// Static (equal shares), Dynamic (by measured throughput), Guided
// (shrinking chunks to the shortest queue) or MemoryAware (by free
// memory). With Steal, a coordinator reads the instances' queue depths and
// sends runtime.Steal{N, To} to the busiest instance's stage actor; its
// kernel forwards up to N queued messages over a dedicated link to the
// idlest, so each kernel stays the only consumer of its own queue. Order is
// not kept across a group; Stats balances over the whole group (an
// instance's own account does not when work is stolen from or by it).
//
// Stealing runs on every backend: on CUDA the victim's device loop forwards
// the messages itself.
package group
