package usertest

import (
	"context"
	"testing"

	"github.com/ringactor/ringactor/p2pqueue"
	rk "github.com/ringactor/ringactor/ringkernel"
)

// Suite is what a case here sees of the conformance suite running it: the
// backend under test and the suite's own helpers, which every case of
// package ringkerneltest uses too. ringkerneltest implements it, one per
// case, and is the only caller.
type Suite interface {
	// Name names the backend in failures ("sim", "cuda").
	Name() string
	// Backend is the backend under test.
	Backend() rk.Backend
	// Device maps a case's device id onto the backend's devices.
	Device(d int) int
	// NewLink makes a link in mapped pinned memory of device 0, freed at
	// cleanup after the kernels reading it have ended.
	NewLink(t testing.TB, capacity uint32, floats int) *p2pqueue.Link
	// LaunchSpec is ringkernel.Launch on the backend, the kernel
	// terminated at cleanup before its links are freed.
	LaunchSpec(t *testing.T, ctx context.Context, spec rk.Spec) (*rk.Kernel, error)
	// Launch starts stage st (id 7, on Device(1)) between fresh links of
	// capacity slots of floats float32s, activated if activate.
	Launch(t *testing.T, st rk.Stage, capacity uint32, floats int, activate bool) Rig
	// Eventually polls cond until it holds, failing t after a generous
	// bound.
	Eventually(t *testing.T, what string, cond func() bool)
}

// Rig is one kernel between a host producer and a host consumer, as
// Suite.Launch starts it.
type Rig interface {
	Kernel() *rk.Kernel
	// In and Out are its in- and out-link; Producer is the host's one
	// producer of In.
	In() *p2pqueue.Link
	Out() *p2pqueue.Link
	Producer() *p2pqueue.Producer
	// SendFloats enqueues a message of v; RecvFloats dequeues the next
	// result, checking its origin, and decodes it.
	SendFloats(id uint64, v []float32, flags p2pqueue.Flags)
	RecvFloats() (p2pqueue.Header, []float32)
	// DeadLetters is what the kernel has dead-lettered so far.
	DeadLetters() []rk.DeadLetter
}
