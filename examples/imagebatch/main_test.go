package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ringactor/ringactor/cuda/cudatest"
	"github.com/ringactor/ringactor/internal/rttest"
	"github.com/ringactor/ringactor/kernels"
	ra "github.com/ringactor/ringactor/runtime"
)

// backend is the example's -backend for the backend under test: sim (the
// CPU device is one: the example wants several), or the CUDA backend (a
// GPU, or the emulated driver: make test runs this package over four
// emulated GPUs), which compiles the user op with NVRTC.
func backend(t *testing.T) string {
	t.Helper()
	if b := rttest.Backend(); b == rttest.CUDA {
		cudatest.Driver(t)
		cudatest.NVRTC(t)
		return b
	}
	return rttest.Sim
}

// The example blurs a batch on every device of the backend under test:
// every image comes back, each device blurs its round-robin share, and
// every image equals the Go reference bit for bit (on CUDA: the user's
// CUDA source, built by NVRTC for a GPU or by the host compiler over the
// emulated driver, against Go). run itself fails on a mismatch, a
// missing image or an account that does not balance.
func TestImageBatchExampleRuns(t *testing.T) {
	b := backend(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out strings.Builder
	const images, size = 48, 24
	rep, err := run(ctx, options{backend: b, images: images, size: size, sigma: 1.2, seed: 3}, &out, io.Discard)
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	t.Logf("\n%s", out.String())
	if rep.backend != b || rep.gpus < 2 || len(rep.shares) != rep.gpus {
		t.Fatalf("ran on %s over %d of its %d GPUs, want %s and all of them (at least 2)", rep.backend, len(rep.shares), rep.gpus, b)
	}
	var sum uint64
	for i, sh := range rep.shares {
		want := uint64((images - i + rep.gpus - 1) / rep.gpus)
		if sh.images != want {
			t.Errorf("device %d blurred %d images, want its round-robin share %d", sh.device, sh.images, want)
		}
		sum += sh.images
	}
	if sum != images || rep.delivered != images || rep.mismatches != 0 {
		t.Fatalf("%d images blurred, %d delivered, %d mismatches; want %d, %d, 0", sum, rep.delivered, rep.mismatches, images, images)
	}
	for _, w := range []string{
		fmt.Sprintf("imagebatch on %s: %d images of %dx%d float32", b, images, size, size),
		`by user op "imagebatch.blur", round-robin over devices [`,
		"images/s", fmt.Sprintf("account: sent %d, delivered %d, dead-lettered 0, in flight 0", images, images),
		fmt.Sprintf("verified %d images against the Go reference, bit for bit: 0 mismatches", images),
	} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("output lacks %q", w)
		}
	}

	// Two devices of the backend's, and a second run in this process (the
	// op registers once).
	rep, err = run(ctx, options{backend: b, images: 5, size: 3, sigma: 0.5, devices: 2, seed: 1}, io.Discard, io.Discard)
	if err != nil || len(rep.shares) != 2 || rep.shares[0].images != 3 || rep.shares[1].images != 2 || rep.mismatches != 0 {
		t.Fatalf("5 images on 2 devices: %+v, %v", rep, err)
	}

	for _, c := range []struct {
		o    options
		want string
	}{
		{options{backend: b, images: 1, size: maxSize + 1, sigma: 1}, "-size 513: want 1 to 512; a 513x513 image is 1052684 bytes a message"},
		{options{backend: b, images: 1, size: 0, sigma: 1}, "-size 0"},
		{options{backend: b, images: 0, size: 8, sigma: 1}, "-images 0"},
		{options{backend: b, images: 1, size: 8, sigma: 0}, "-sigma 0"},
		{options{backend: b, images: 1, size: 8, sigma: 1, devices: 65}, "-devices 65: the " + b + " backend has"},
	} {
		if _, err := run(ctx, c.o, io.Discard, io.Discard); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want an error with %q", c.o, err, c.want)
		}
	}
}

// The Go reference the results are checked against is itself a Gaussian
// blur with clamped borders: an impulse comes back as the kernel's
// weights, a constant image stays constant, an impulse in a corner gives
// the weight of every tap the clamp folds onto it, and a message that is
// not an image, or an out slot too small, is refused.
func TestBlurReference(t *testing.T) {
	w := gaussian(1)
	var sum float64
	for _, x := range w {
		sum += float64(x)
	}
	if math.Abs(sum-1) > 1e-6 || w[0] >= w[1] || w[1] >= w[2] || w[2] != w[2*taps] || w[radius*taps+radius] <= w[radius*taps+radius+1] {
		t.Fatalf("weights %v: not a normalized Gaussian", w)
	}
	img := func(s int, f func(x, y int) float32) []float32 {
		v := make([]float32, header+s*s)
		v[0], v[1] = float32(s), float32(s)
		for y := range s {
			for x := range s {
				v[header+y*s+x] = f(x, y)
			}
		}
		return v
	}
	const s = 9
	apply := func(in []float32) []float32 {
		t.Helper()
		out := make([]float32, len(in))
		if n, err := blur(w, nil, in, out); err != nil || n != len(in) {
			t.Fatal(n, err)
		}
		if out[0] != in[0] || out[1] != in[1] {
			t.Fatalf("header %v, want %v", out[:2], in[:2])
		}
		return out[header:]
	}
	// An impulse at (4, 4): out(x, y) is the weight of tap (4-x, 4-y).
	out := apply(img(s, func(x, y int) float32 { return b2f(x == 4 && y == 4) }))
	for y := range s {
		for x := range s {
			var want float32
			if dx, dy := 4-x, 4-y; max(dx, -dx) <= radius && max(dy, -dy) <= radius {
				want = w[(dy+radius)*taps+dx+radius]
			}
			if out[y*s+x] != want {
				t.Fatalf("impulse: (%d, %d) = %g, want %g", x, y, out[y*s+x], want)
			}
		}
	}
	// A constant image stays constant (to rounding).
	for k, v := range apply(img(s, func(int, int) float32 { return 0.5 })) {
		if math.Abs(float64(v)-0.5) > 1e-6 {
			t.Fatalf("constant 0.5: pixel %d = %g", k, v)
		}
	}
	// An impulse at the corner (0, 0): out(0, 0) takes every tap that
	// clamps onto it, dx and dy in [-2, 0]: nine weights.
	var corner float64
	for dy := -radius; dy <= 0; dy++ {
		for dx := -radius; dx <= 0; dx++ {
			corner += float64(w[(dy+radius)*taps+dx+radius])
		}
	}
	if got := apply(img(s, func(x, y int) float32 { return b2f(x == 0 && y == 0) }))[0]; math.Abs(float64(got)-corner) > 1e-6 {
		t.Fatalf("corner impulse: (0, 0) = %g, want %g (the clamped taps' weights)", got, corner)
	}
	// Refusals.
	for _, in := range [][]float32{nil, {3}, {3, 3, 1}, {0, 0}, {2.5, 2, 1, 1, 1, 1, 1}, {float32(math.NaN()), 1, 1}, {1, 1e6, 1}} {
		if _, err := blur(w, nil, in, make([]float32, 16)); !errors.Is(err, errNotAnImage) {
			t.Errorf("%v: %v, want errNotAnImage", in, err)
		}
	}
	if _, err := blur(w, nil, []float32{2, 1, 1, 1}, make([]float32, 3)); !errors.Is(err, kernels.ErrOutputTooSmall) {
		t.Errorf("out too small: %v", err)
	}
	if _, err := blur(w[:3], nil, []float32{1, 1, 1}, make([]float32, 3)); err == nil {
		t.Error("3 weights accepted")
	}
}

// On the device too, a message that is not an image is dead-lettered as
// a stage error (the CUDA side's header check, RA_STAGE_ERR_DOMAIN; on sim
// the reference's errNotAnImage), and the image beside it still comes
// back equal to the reference.
func TestNotAnImageIsDeadLettered(t *testing.T) {
	b := backend(t)
	if err := register(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rt, err := ra.New(ra.Config{Devices: ra.DeviceOptions{Backend: b}})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	w := gaussian(1)
	var mu sync.Mutex // results and dead letters may come on different goroutines
	var got []ra.Result
	var dead []ra.DeadLetter
	p, err := rt.Build(ctx, ra.PipelineSpec{Name: "not-an-image",
		Stages:       []ra.StageSpec{{Name: "blur", Op: opName, Params: w, Device: rt.Registry().GPUs()[0].ID}},
		Deliver:      ra.Sink{Func: func(r ra.Result) { mu.Lock(); got = append(got, r); mu.Unlock() }},
		OnDeadLetter: func(d ra.DeadLetter) { mu.Lock(); dead = append(dead, d); mu.Unlock() }})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	good := []float32{3, 2, 1, 2, 3, 4, 5, 6}
	bad := [][]float32{{3, 3, 1, 2, 3}, {0, 1}, {1.5, 2, 1, 1, 1}}
	ds := []ra.Data{{ID: 1, Floats: good}}
	for i, f := range bad {
		ds = append(ds, ra.Data{ID: uint64(i + 2), Floats: f})
	}
	if _, err := p.SendBatch(ctx, ds); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(ctx, true); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	want := make([]float32, len(good))
	if _, err := blur(w, nil, good, want); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].ID != 1 {
		t.Fatalf("results %+v, want the image alone", got)
	}
	if _, ok := diff(got[0].Floats, want); !ok {
		t.Fatalf("the image: %v, want %v", got[0].Floats, want)
	}
	if len(dead) != len(bad) {
		t.Fatalf("dead letters %v, want %d", dead, len(bad))
	}
	for _, d := range dead {
		if d.ID < 2 || d.Reason != ra.ReasonStageError || d.Stage != "blur" {
			t.Errorf("dead letter %v, want a stage error at blur", d)
		}
	}
	if st := p.Stats(); st.Sent != 4 || st.Delivered != 1 || st.DeadLettered != 3 || st.InFlight != 0 {
		t.Fatalf("stats %+v", st)
	}
}

func b2f(b bool) float32 {
	if b {
		return 1
	}
	return 0
}
