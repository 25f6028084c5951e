package ringkerneltest

import (
	"context"
	"testing"

	"github.com/ringactor/ringactor/p2pqueue"
	rk "github.com/ringactor/ringactor/ringkernel"
	"github.com/ringactor/ringactor/ringkernel/ringkerneltest/internal/usertest"
)

// sub makes a case of the cases kept in sub-packages (by concern; see
// internal/usertest): it runs with the case's suite behind their narrow
// Suite interface.
func sub(run func(*testing.T, usertest.Suite)) func(*suite, *testing.T) {
	return func(s *suite, t *testing.T) { run(t, hook{s}) }
}

// hook is a case's suite as usertest.Suite.
type hook struct{ s *suite }

func (h hook) Name() string        { return h.s.opts.Name }
func (h hook) Backend() rk.Backend { return h.s.b }
func (h hook) Device(d int) int    { return h.s.device(d) }
func (h hook) NewLink(t testing.TB, capacity uint32, floats int) *p2pqueue.Link {
	t.Helper()
	return h.s.newLink(t, capacity, floats)
}
func (h hook) LaunchSpec(t *testing.T, ctx context.Context, spec rk.Spec) (*rk.Kernel, error) {
	return h.s.launchSpec(t, ctx, spec)
}
func (h hook) Launch(t *testing.T, st rk.Stage, capacity uint32, floats int, activate bool) usertest.Rig {
	t.Helper()
	return rigHook{h.s.launch(t, st, capacity, floats, activate)}
}
func (hook) Eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	eventually(t, what, cond)
}

// rigHook is a rig as usertest.Rig.
type rigHook struct{ r *rig }

func (h rigHook) Kernel() *rk.Kernel                       { return h.r.k }
func (h rigHook) In() *p2pqueue.Link                       { return h.r.in }
func (h rigHook) Out() *p2pqueue.Link                      { return h.r.out }
func (h rigHook) Producer() *p2pqueue.Producer             { return h.r.send }
func (h rigHook) DeadLetters() []rk.DeadLetter             { return h.r.deadLetters() }
func (h rigHook) RecvFloats() (p2pqueue.Header, []float32) { h.r.t.Helper(); return h.r.recvFloats() }
func (h rigHook) SendFloats(id uint64, v []float32, flags p2pqueue.Flags) {
	h.r.t.Helper()
	h.r.sendFloats(id, v, flags)
}
