package runtime

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	rk "github.com/ringactor/ringactor/ringkernel"
	"github.com/ringactor/ringactor/ringkernel/sim"
)

// kindNamed is the registered kind of that name.
func kindNamed(t *testing.T, name string) rk.Kind {
	for _, k := range rk.Kinds() {
		if k.Name == name {
			return k
		}
	}
	t.Fatalf("no backend kind %q registered", name)
	return rk.Kind{}
}

// closingBackend is a sim backend that holds "device memory": it refuses
// to close while a kernel runs, as the CUDA backend does.
type closingBackend struct {
	*sim.Backend
	mu     sync.Mutex
	loops  []rk.Loop
	closed int
}

func (b *closingBackend) Start(job *rk.Job) (rk.Loop, error) {
	l, err := b.Backend.Start(job)
	if err == nil {
		b.mu.Lock()
		b.loops = append(b.loops, l)
		b.mu.Unlock()
	}
	return l, err
}

func (b *closingBackend) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, l := range b.loops {
		select {
		case <-l.Done():
		default:
			return errors.New("a kernel still runs")
		}
	}
	b.closed++
	return nil
}

// Runtime.Close ends a pipeline left open before it closes the backend it
// opened, and closes it once.
func TestCloseReleasesTheBackendAfterItsKernels(t *testing.T) {
	cb := &closingBackend{Backend: sim.New(3)}
	kind := kindNamed(t, "sim")
	kind.Open = func(rk.OpenOptions) (rk.Backend, error) { return cb, nil }
	var log bytes.Buffer
	rt, err := newRuntime(Config{Devices: DeviceOptions{SimDevices: 3, Log: &log}}, []rk.Kind{kind})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	spec := GuideSpec("left-open", [3]int{0, 1, 2})
	p, err := rt.Build(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := p.Send(ctx, Data{Floats: []float32{1}}); err != nil {
		t.Fatal(err)
	}
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	if err := rt.Close(); err != nil || cb.closed != 1 {
		t.Fatalf("second Close: %v; backend closed %d times, want 1", err, cb.closed)
	}
	if st := p.Stats(); st.InFlight != 0 || st.Sent != 1 {
		t.Fatalf("the pipeline left open was not ended: %+v", st)
	}
}
