package ringkerneltest

import (
	"testing"
	"time"

	"github.com/ringactor/ringactor/kernels"
	"github.com/ringactor/ringactor/p2pqueue"
	rk "github.com/ringactor/ringactor/ringkernel"
)

// The delay op sleeps on the device: each message's service time, as its
// trace record measures it on the device's clock, is at least
// params[0] + params[1] * in[0] ns, and the message comes out unchanged.
func (s *suite) testDelaySleepsOnTheDevice(t *testing.T) {
	params := []float32{2e5, 1e6} // 0.2 ms a message, plus in[0] ms
	r := s.launch(t, rk.Stage{Name: "wait", Op: "delay", Params: params}, 16, 4, true)
	ins := [][]float32{{0, 1}, {4, 2}, {1.5}, {3, 7}, {2.5, 8, 9}}
	for i, in := range ins {
		r.sendFloats(uint64(i), in, p2pqueue.FlagSampled)
	}
	for i, in := range ins {
		h, got := r.recvFloats()
		if h.ID != uint64(i) || len(got) != len(in) {
			t.Fatalf("message %d came out as %d, %v; sent %v", i, h.ID, got, in)
		}
		for j := range in {
			if got[j] != in[j] {
				t.Fatalf("message %d changed: %v, sent %v", i, got, in)
			}
		}
	}
	eventually(t, "a trace record per message", func() bool { r.mu.Lock(); defer r.mu.Unlock(); return len(r.trace) == len(ins) })
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, tr := range r.trace {
		want := kernels.DelayOf(params, ins[tr.ID])
		if want < 200*time.Microsecond {
			t.Fatalf("message %d: the test's delay %v is shorter than params[0]", tr.ID, want)
		}
		if got := tr.Done.Sub(tr.Dequeued); got < want {
			t.Errorf("message %d (in[0] %g): served in %v, want at least %v", tr.ID, ins[tr.ID][0], got, want)
		}
	}
}
