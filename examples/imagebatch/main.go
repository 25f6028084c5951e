// Command imagebatch is the multi-GPU guide's complete example: a batch
// of images, each blurred by a CUDA stage the example writes itself (a
// 5x5 Gaussian blur with clamp-to-edge borders, registered with its Go
// reference as the user op "imagebatch.blur", blur.go), spread
// round-robin over N devices by a stage group (runtime/group, policy
// Static: image k to device k mod N). Every image comes back and is
// checked against the Go reference bit for bit; the group's account must
// balance (every image delivered, none dead-lettered, none in flight).
// It prints per device the images it blurred, its busy time (the device
// loop's own time on batches) and when its last image came back, the
// throughput, and the number of mismatching images; it exits 1 when any
// image mismatches or is missing.
//
//	go run ./examples/imagebatch                       # sim, or the GPUs when CUDA runs them
//	go run ./examples/imagebatch -backend cuda         # the GPUs (NVRTC compiles the stage)
//	make emu && RINGACTOR_LIBCUDA=$PWD/.emu/libcudaemu.so RINGACTOR_EMU_DEVICES=4 \
//	    go run ./examples/imagebatch -backend cuda     # the emulated driver, no GPU
//	go run ./examples/imagebatch -images 256 -size 64 -sigma 1.5 -devices 2 -seed 7
//
// On sim the stage is the Go reference itself, so the check shows the
// plumbing (every image to a device and back, in one piece); on the CUDA
// backend it compares the CUDA source, compiled by NVRTC for a GPU, or by
// the host's C++ compiler over the emulated driver (README "Your own CUDA
// stages, without a GPU"; NVRTC must be installed either way: the backend
// compiles a user op's PTX at its first launch), against Go.
//
// Images: -images of them, -size x -size pixels each, float32 in [0, 1)
// drawn from -seed. A message is an image with its two-float header
// (width, height), so it needs 4*(2 + size²) bytes plus the slot's
// 32-byte header: at the default 32x32, 4,104 bytes in a 4,160-byte slot.
// A link slot holds at most 16 MiB (p2pqueue.MaxSlotSize, 2047x2047
// pixels), but one GPU thread blurs a whole image, so this example takes
// sides up to maxSize (512: 1 MiB a message) and refuses bigger ones.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"os/signal"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/ringactor/ringactor/kernels"
	"github.com/ringactor/ringactor/p2pqueue"
	ra "github.com/ringactor/ringactor/runtime"
	"github.com/ringactor/ringactor/runtime/group"
)

// maxSize is the largest -size the example takes.
const maxSize = 512

type options struct {
	backend string // auto, sim or cuda
	images  int
	size    int
	sigma   float64
	devices int // how many of the backend's GPUs; 0: all
	seed    uint64
}

func main() {
	var o options
	flag.StringVar(&o.backend, "backend", "auto", "auto, sim or cuda (auto: the GPUs when the CUDA backend runs them, else simulated devices)")
	flag.IntVar(&o.images, "images", 64, "images in the batch")
	flag.IntVar(&o.size, "size", 32, fmt.Sprintf("width and height of each image in pixels (1 to %d)", maxSize))
	flag.Float64Var(&o.sigma, "sigma", 1, "the Gaussian's standard deviation in pixels (the kernel is 5x5)")
	flag.IntVar(&o.devices, "devices", 0, "devices to spread the images over, the backend's first N GPUs (0: all of them)")
	flag.Uint64Var(&o.seed, "seed", 1, "seed of the images' pixels")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if _, err := run(ctx, o, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "imagebatch:", err)
		os.Exit(1)
	}
}

// deviceShare is one device's part of a run.
type deviceShare struct {
	device int
	images uint64        // blurred there (the group's Processed)
	busy   time.Duration // the device loop's time on batches
	last   time.Duration // when its last image came back, from the first send
}

// report is what a run did: the test reads it beside the output.
type report struct {
	backend    string
	gpus       int // the backend's
	shares     []deviceShare
	delivered  int
	mismatches int
	elapsed    time.Duration
}

// register registers the blur op once per process (kernels.Register
// refuses a name twice; a test runs the example more than once).
var register = sync.OnceValue(func() error { return kernels.Register(blurOp) })

// slotSize is the slot that holds a size x size image message.
func slotSize(size int) int {
	return int(p2pqueue.ConfigFor(p2pqueue.MinCapacity, 4*(header+size*size)).SlotSize)
}

// capacity is the slots per link: a power of two with about 8 MiB of
// slots, from 4 to 256.
func capacity(slot int) int {
	c := 256
	for c > 4 && c*slot > 8<<20 {
		c /= 2
	}
	return c
}

func run(ctx context.Context, o options, w, errOut io.Writer) (report, error) {
	switch {
	case o.images < 1:
		return report{}, fmt.Errorf("-images %d: want at least 1", o.images)
	case o.size < 1 || o.size > maxSize:
		return report{}, fmt.Errorf("-size %d: want 1 to %d; a %dx%d image is %d bytes a message, and one GPU thread blurs a whole image, so this example stops at %dx%d (a link slot holds at most %d bytes, p2pqueue.MaxSlotSize)",
			o.size, maxSize, o.size, o.size, 4*(header+o.size*o.size), maxSize, maxSize, p2pqueue.MaxSlotSize)
	case !(o.sigma > 0 && o.sigma <= 100):
		return report{}, fmt.Errorf("-sigma %g: want more than 0, at most 100", o.sigma)
	case o.devices < 0:
		return report{}, fmt.Errorf("-devices %d: want 0 (all) or more", o.devices)
	}
	if err := register(); err != nil {
		return report{}, err
	}
	rt, err := ra.New(ra.Config{Devices: ra.DeviceOptions{Backend: o.backend}})
	if err != nil {
		return report{}, err
	}
	defer rt.Close()
	reg := rt.Registry()
	fmt.Fprintln(errOut, reg.Note())
	gpus := reg.GPUs()
	rep := report{backend: reg.BackendName(), gpus: len(gpus)}
	n := o.devices
	if n == 0 {
		n = len(gpus)
	}
	if n == 0 || n > len(gpus) {
		return report{}, fmt.Errorf("-devices %d: the %s backend has %d GPUs (RINGACTOR_SIM_DEVICES sets sim's, RINGACTOR_EMU_DEVICES the emulated driver's)", o.devices, reg.BackendName(), len(gpus))
	}
	devs := make([]int, n)
	for i := range devs {
		devs[i] = gpus[i].ID
	}
	weights := gaussian(o.sigma)
	slot := slotSize(o.size)
	fmt.Fprintf(w, "imagebatch on %s: %d images of %dx%d float32 (%d bytes a message, %d-byte slots), a %dx%d Gaussian blur (sigma %g) by user op %q, round-robin over devices %v\n",
		reg.BackendName(), o.images, o.size, o.size, 4*(header+o.size*o.size), slot, taps, taps, o.sigma, opName, devs)

	// The images, and where each result lands (results come back on every
	// instance's pump at once).
	rng := rand.New(rand.NewPCG(o.seed, 37))
	in := make([][]float32, o.images)
	for i := range in {
		img := make([]float32, header+o.size*o.size)
		img[0], img[1] = float32(o.size), float32(o.size)
		for k := header; k < len(img); k++ {
			img[k] = rng.Float32()
		}
		in[i] = img
	}
	var (
		mu   sync.Mutex
		got  = make([][]float32, o.images)
		at   = make([]time.Time, o.images)
		left = o.images
		done = make(chan struct{})
		dead []ra.DeadLetter
	)
	end := func() { // one more image ended, delivered or dead-lettered; mu held
		if left--; left == 0 {
			close(done)
		}
	}
	spec := group.Spec{Name: "imagebatch", Devices: devs, Policy: group.Static,
		Stage: ra.StageSpec{Name: "blur", Op: opName, Params: weights, SlotSize: slot, Capacity: capacity(slot)},
		Deliver: ra.Sink{Func: func(r ra.Result) {
			now := time.Now()
			mu.Lock()
			defer mu.Unlock()
			if r.ID < 1 || r.ID > uint64(o.images) || got[r.ID-1] != nil {
				return // not one of ours, or twice: the count below tells
			}
			got[r.ID-1], at[r.ID-1] = r.Floats, now
			end()
		}},
		OnDeadLetter: func(d ra.DeadLetter) {
			mu.Lock()
			defer mu.Unlock()
			dead = append(dead, d)
			end()
		},
	}
	g, err := group.New(ctx, rt, spec)
	if err != nil {
		return report{}, err
	}
	defer g.Close(context.Background(), false) // a no-op after the Close below
	ds := make([]ra.Data, o.images)
	for i := range ds {
		ds[i] = ra.Data{ID: uint64(i + 1), Floats: in[i]}
	}
	start := time.Now()
	if _, err := g.SendBatch(ctx, ds); err != nil {
		return report{}, err
	}
	select {
	case <-done:
	case <-ctx.Done():
		return report{}, ctx.Err()
	}
	rep.elapsed = time.Since(start)
	if err := g.Close(ctx, true); err != nil {
		return rep, err
	}

	// The account: every image sent once, delivered, none dead-lettered or
	// still in flight, and the round-robin split's shares.
	st := g.Stats()
	busy := map[int]time.Duration{}
	for _, s := range g.Flow().Stats().Stages {
		busy[s.Device] += s.Busy
	}
	mu.Lock()
	defer mu.Unlock()
	var processed uint64
	for i, inst := range st.Instances {
		sh := deviceShare{device: inst.Device, images: inst.Processed, busy: busy[inst.Device]}
		// Static sends image k (id k+1) to instance k mod n.
		for k := i; k < o.images; k += n {
			if !at[k].IsZero() {
				sh.last = max(sh.last, at[k].Sub(start))
			}
		}
		processed += inst.Processed
		if want := uint64((o.images - i + n - 1) / n); inst.Assigned != want || inst.Processed != want || inst.Stolen != 0 {
			return rep, fmt.Errorf("device %d was assigned %d images and blurred %d, want %d each (round-robin): %+v", inst.Device, inst.Assigned, inst.Processed, want, st.Instances)
		}
		rep.shares = append(rep.shares, sh)
	}
	if len(dead) > 0 {
		return rep, fmt.Errorf("%d of %d images dead-lettered, the first: %v", len(dead), o.images, dead[0])
	}
	if st.Sent != uint64(o.images) || st.Delivered != uint64(o.images) || st.DeadLettered != 0 || st.InFlight != 0 || processed != uint64(o.images) {
		return rep, fmt.Errorf("the group's account does not balance: %+v", st)
	}

	// Every image against the Go reference, bit for bit.
	want := make([]float32, header+o.size*o.size)
	maxDiff := 0.0
	for i := range in {
		if got[i] != nil {
			rep.delivered++
		}
		if _, err := blur(weights, nil, in[i], want); err != nil {
			return rep, err
		}
		if d, ok := diff(got[i], want); !ok {
			rep.mismatches++
			maxDiff = max(maxDiff, d)
		}
	}

	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "device\timages\tbusy (ms)\tlast image back (ms)\t")
	for _, sh := range rep.shares {
		fmt.Fprintf(tw, "%d\t%d\t%.2f\t%.2f\t\n", sh.device, sh.images, ms(sh.busy), ms(sh.last))
	}
	tw.Flush()
	sec := rep.elapsed.Seconds()
	fmt.Fprintf(w, "%d images in %.2f ms: %.0f images/s, %.1f Mpixel/s\n", o.images, ms(rep.elapsed),
		float64(o.images)/sec, float64(o.images*o.size*o.size)/sec/1e6)
	fmt.Fprintf(w, "account: sent %d, delivered %d, dead-lettered %d, in flight %d\n", st.Sent, st.Delivered, st.DeadLettered, st.InFlight)
	fmt.Fprintf(w, "verified %d images against the Go reference, bit for bit: %d mismatches\n", rep.delivered, rep.mismatches)
	if rep.mismatches > 0 {
		return rep, fmt.Errorf("%d of %d images differ from the Go reference (or are missing; largest difference %g)", rep.mismatches, o.images, maxDiff)
	}
	return rep, nil
}

// diff compares a result with the reference: ok when every float is the
// same bit for bit; else the largest difference (+Inf for a result of
// the wrong length).
func diff(got, want []float32) (float64, bool) {
	if len(got) != len(want) {
		return math.Inf(1), false
	}
	d, ok := 0.0, true
	for k := range got {
		if math.Float32bits(got[k]) != math.Float32bits(want[k]) {
			ok = false
			d = max(d, math.Abs(float64(got[k])-float64(want[k])))
		}
	}
	return d, ok
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
