// Package gpubench measures ring kernels on a real GPU against the
// conventional paths, in one run: (a) a 64-byte message host -> ring kernel
// -> host; (b) the same work as a kernel launch per message (copy in,
// kernel, copy out on one stream, from pinned host memory, then a
// synchronize) and (b') as one replay per message of a CUDA graph captured
// from that same work, the stronger baseline, both measured in the same
// run, interleaved; (c) one hop between two ring kernels through a link in
// device memory (from the device timestamps of sampled messages); and (d)
// batched 64-byte messages through the 3-stage pipeline on one GPU; (a),
// (c) and (d) once per variant (a loop and a link format: variants.go),
// beside the floors and microbenchmarks of the same run (floors.go).
package gpubench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	drv "github.com/ringactor/ringactor/cuda"
	"github.com/ringactor/ringactor/cuda/hostbuild"
	"github.com/ringactor/ringactor/internal/bench"
	"github.com/ringactor/ringactor/internal/hist"
	"github.com/ringactor/ringactor/kernels"
	"github.com/ringactor/ringactor/p2pqueue"
	rk "github.com/ringactor/ringactor/ringkernel"
	rkcuda "github.com/ringactor/ringactor/ringkernel/cuda"
)

// Row is a benchmark row; Ratio is this row's msgs/s over its
// baseline's (for latency rows msgs/s is 1/p50, so the ratio is the
// baseline's p50 over this one's).
type Row = bench.Row

// Options sizes the run.
type Options struct {
	Samples  int // round trips, launches and graph replays measured, each (default 20000; hops: a quarter)
	Messages int // messages through the pipeline (default 2,000,000)
	// VariantLimit bounds each block of a variant other than the default
	// (its round trips, a hop's or a pipeline's launch and messages): one
	// that runs longer is stopped and left out ("did not finish"), and the
	// others go on. 0: no limit.
	VariantLimit time.Duration
	// defaultOnly: the default variant alone (Run: its rows are the
	// comparisons; the other variants would only add time).
	defaultOnly bool
	Progress    io.Writer
}

// Run measures the default variant on GPU 0 and returns the comparisons
// (Report's Rows: ringactor bench's gpu/ rows); Measure measures every
// variant and returns the rest too.
func Run(ctx context.Context, b *rkcuda.Backend, o Options) ([]Row, error) {
	o.defaultOnly = true
	rep, err := Measure(ctx, b, o)
	if err != nil {
		return nil, err
	}
	return rep.Rows, nil
}

// Measure measures everything on GPU 0: the floors and microbenchmarks
// first (their module loads while no ring kernel runs), then every
// variant's round trip interleaved with the mapped ping-pong floor, the
// per-message baselines, every variant's hop and 3-stage pipeline (the
// variants in turn, in blocks), and the default's pipeline split. Over
// the emulated driver every row is labelled emulated; a row the driver
// cannot run, and a variant the backend refuses to launch
// (ringkernel.ErrUnsupported), is left out with the reason
// (Report.LeftOut, "<variant>: <what>: <the backend's error>"), never
// failed.
func Measure(ctx context.Context, b *rkcuda.Backend, o Options) (*Report, error) {
	if o.Samples <= 0 {
		o.Samples = 20000
	}
	if o.Messages <= 0 {
		o.Messages = 2_000_000
	}
	say := func(f string, a ...any) {
		if o.Progress != nil {
			fmt.Fprintf(o.Progress, f+"\n", a...)
		}
	}
	rep := &Report{}
	leave := func(f string, a ...any) {
		rep.LeftOut = append(rep.LeftOut, fmt.Sprintf(f, a...))
		say("gpubench: left out: "+f, a...)
	}
	rep.Device, rep.Emulated = deviceName(b)
	emu := rep.Emulated
	// Every module this run loads is loaded now, before the first ring
	// kernel (a load beside a running one may wait for it forever), and
	// unloaded once the last has ended.
	settle(b, emu)
	w, err := newOneShot(b)
	if err != nil {
		return nil, fmt.Errorf("the launch-per-message kernel: %w", err)
	}
	f, ferr := newFloors(b, o.Samples)
	defer func() {
		settle(b, emu)
		if f != nil {
			f.close()
		}
		w.close()
	}()
	say("gpubench: (f) floors and microbenchmarks, %d samples each", o.Samples)
	if ferr != nil {
		leave("%s, %s and the micro/ rows: %v", rowFloorMapped, rowFloorDevice, ferr)
	} else if rep.Stats, err = floorStats(ctx, f, o.Samples, emu); err != nil {
		return nil, fmt.Errorf("floors: %w", err)
	}
	// Each row goes to the progress as it is measured too, so a run
	// stopped before its end (the GPU bundle's time limit) keeps them.
	put := func(s Stat) {
		rep.Stats = append(rep.Stats, s)
		say("gpubench:   %s", s.line())
	}
	for _, s := range rep.Stats {
		say("gpubench:   %s", s.line())
	}
	vs := variants
	if o.defaultOnly {
		vs = vs[:1]
	}
	var live []string // the variants not left out, in order
	leaveVariant := func(v variant, what string, err error) {
		leave("%s: %s: %v", v.name, what, err)
	}
	say("gpubench: (a) ring-kernel round trip, %d samples per variant (%d variants), interleaved with %s", o.Samples, len(vs), rowFloorMapped)
	r := &rig{b: b}
	es, floor, err := interleaved(ctx, r, f, o.Samples, vs, o.VariantLimit, leaveVariant)
	if err != nil {
		r.close()
		return nil, fmt.Errorf("round trip: %w", err)
	}
	rt, parts := es[0].lat, es[0].parts()
	fs := stat(rowFloorMapped, "", floor, emu)
	fs.Note = "one thread polls a flag in mapped pinned host memory and answers; the round trip the host sees"
	if f != nil {
		rep.Stats = append([]Stat{fs}, rep.Stats...)
		say("gpubench:   %s", fs.line())
	}
	var ran []variant
	for _, e := range es {
		ran = append(ran, e.v)
		s := stat(rowVarRoundTrip, e.v.name, e.lat, emu)
		if f != nil {
			s = against(s, fs)
		}
		put(s)
		p, err := e.phases(ctx, s.Name)
		if err != nil {
			r.close()
			return nil, fmt.Errorf("variant %s: phases: %w", e.v.name, err)
		}
		rep.Phases = append(rep.Phases, p)
	}
	r.close()
	say("gpubench: (b) launch per message and graph replay per message, %d samples each", o.Samples)
	base, graph, why, err := perMessage(ctx, w, o.Samples)
	if err != nil {
		return nil, fmt.Errorf("per-message baselines: %w", err)
	}
	if why != "" {
		leave("%s: %s", rowGraph, why)
	}
	ls := stat(rowLaunch, "", base, emu)
	put(ls)
	if graph != nil {
		put(against(stat(rowGraph, "", graph, emu), ls))
	}
	for i, name := range []string{rowRTSend, rowRTStage, rowRTBack} {
		put(stat(name, variants[0].name, parts[i], emu))
	}
	const hopBlocks = 4
	hn := max(o.Samples/4/hopBlocks, 1)
	say("gpubench: (c) hop between two ring kernels, %d samples per variant (%d variants), in %d blocks", hn*hopBlocks, len(ran), hopBlocks)
	hops := map[variant][]time.Duration{}
	if ran, err = inTurn(ctx, ran, hopBlocks, "hop", o.VariantLimit, leaveVariant, func(ctx context.Context, v variant, _ int) error {
		lat, err := hop(ctx, b, hn, v)
		hops[v] = append(hops[v], lat...)
		return err
	}); err != nil {
		return nil, err
	}
	for _, v := range ran {
		lat := hops[v]
		slices.Sort(lat)
		s := stat(rowVarHop, v.name, lat, emu)
		if d, ok := find(rep.Stats, rowFloorDevice); ok {
			s = against(s, d)
		}
		put(s)
	}
	pipeBlocks := min(4, o.Messages)
	pn := max(o.Messages/pipeBlocks, 1)
	say("gpubench: (d) 3-stage pipeline, %d messages per variant (%d variants), in %d blocks", pn*pipeBlocks, len(ran), pipeBlocks)
	perMsg := map[variant][]time.Duration{} // each block's ns per message
	var timed []Phase
	if ran, err = inTurn(ctx, ran, pipeBlocks, "pipeline", o.VariantLimit, leaveVariant, func(ctx context.Context, v variant, _ int) error {
		rate, err := pipeline(ctx, b, pn, 3, v, &timed)
		if err == nil && rate > 0 {
			perMsg[v] = append(perMsg[v], time.Duration(1e9/rate))
		}
		return err
	}); err != nil {
		return nil, err
	}
	rep.Phases = append(rep.Phases, mergePhases(timed)...)
	var rate float64
	for _, v := range ran {
		d := perMsg[v]
		var sum time.Duration
		for _, x := range d {
			sum += x
		}
		slices.Sort(d)
		s := stat(rowVarPipeline, v.name, d, emu)
		if sum > 0 {
			s.MsgsPerSec = float64(len(d)) * 1e9 / float64(sum) // every block the same messages: all of them over all their time
		}
		s.Note = pipelineNote
		if v == variants[0] {
			rate = s.MsgsPerSec
		}
		put(s)
		live = append(live, v.name)
	}
	say("gpubench: variants measured throughout: %s", strings.Join(live, ", "))
	say("gpubench: (e) where the pipeline's time goes: the host alone, host to a sink kernel, one stage; %d messages each", o.Messages)
	var split [3]float64
	for i, stages := range []int{-1, 0, 1} {
		if split[i], err = pipeline(ctx, b, o.Messages, stages, variants[0], nil); err != nil {
			return nil, fmt.Errorf("pipeline with %d stages: %w", stages, err)
		}
	}
	out := rows(rt, base, graph, hops[variants[0]], rate)
	for i, name := range []string{rowRTSend, rowRTStage, rowRTBack} {
		out = append(out, Row{Name: name, Backend: "cuda", P50: pct(parts[i], .5), P99: pct(parts[i], .99)})
	}
	for i, name := range []string{rowHostLink, rowIngress, rowOneStage} {
		r := Row{Name: name, Backend: "cuda", MsgsPerSec: split[i], Baseline: rowPipeline}
		if rate > 0 {
			r.Ratio = split[i] / rate
		}
		if i == 0 {
			r.Backend = "host"
		}
		out = append(out, r)
	}
	label(out, emu)
	rep.Rows = out
	for i := range rep.Phases {
		rep.Phases[i].Emulated = emu
	}
	// The ledger (another part of bench-gpu) is measured here, over the
	// emulated driver.
	return rep, nil
}

// deviceName is GPU 0's name, and whether the driver is the emulated one
// (it builds kernels for the host: package hostbuild's dlsym of its
// marker entry point).
func deviceName(b *rkcuda.Backend) (string, bool) {
	emu := hostbuild.Supported(b.Driver())
	dev, err := b.Driver().Device(0)
	if err != nil {
		return "", emu
	}
	name, _ := dev.Name()
	return name, emu
}

// Row names.
const (
	rowRoundTrip = "gpu/round-trip-64B"
	rowLaunch    = "gpu/launch-per-message-64B"
	rowGraph     = "gpu/graph-replay-per-message-64B"
	rowHop       = "gpu/hop-device-link"
	rowPipeline  = "gpu/pipeline-3stage-64B"

	// Where a round trip's time goes, from sampled messages' trace
	// records (device times through the calibrated offset, within about
	// a microsecond): host send to the stage starting (the host's write
	// over PCIe, the loop's poll of tail, the slots staged), the stage
	// itself, and the stage's end to the host holding the result (slot
	// headers, the .sys release of tail, the host's poll).
	rowRTSend  = "gpu/round-trip/send-to-stage"
	rowRTStage = "gpu/round-trip/stage"
	rowRTBack  = "gpu/round-trip/stage-to-host"

	// Where the pipeline's time goes: the same sender and receiver over a
	// link in mapped pinned memory with no kernel (the host's ceiling),
	// the sender into a sink kernel (ingress over PCIe and the loop), and
	// one identity stage between them.
	rowHostLink = "gpu/pipeline-split/host-only"
	rowIngress  = "gpu/pipeline-split/ingress-to-sink"
	rowOneStage = "gpu/pipeline-split/one-stage"

	// Each variant's measurements (Stats, the variant column): the
	// default's are also the gpu/ rows.
	rowVarRoundTrip = "variant/round-trip-64B"
	rowVarHop       = "variant/hop-device-link"
	rowVarPipeline  = "variant/pipeline-3stage-64B"
)

// pipelineNote says what a variant/pipeline row's columns are.
const pipelineNote = "msgs/s: all its messages over all its blocks' time; p50/p90/p99: ns per message of its n blocks (each a fresh launch of the three kernels)"

// rows lays the measurements out as package bench does: the round trip
// once per baseline it is compared with (launch per message, then graph
// replay per message), the graph replay against a launch per message,
// then the rest. A nil graph (no stream capture) has no graph rows. Latency rows have msgs/s = 1/p50, so each ratio is the
// baseline's p50 over the row's.
func rows(rt, launch, graph, hop []time.Duration, rate float64) []Row {
	lat := func(name string, d []time.Duration) Row {
		r := Row{Name: name, Backend: "cuda", P50: pct(d, .5), P99: pct(d, .99)}
		if r.P50 > 0 {
			r.MsgsPerSec = 1e9 / float64(r.P50)
		}
		return r
	}
	vs := func(r, base Row) Row {
		r.Baseline = base.Name
		if base.MsgsPerSec > 0 {
			r.Ratio = r.MsgsPerSec / base.MsgsPerSec
		}
		return r
	}
	rtRow, launchRow, graphRow := lat(rowRoundTrip, rt), lat(rowLaunch, launch), lat(rowGraph, graph)
	out := []Row{vs(rtRow, launchRow), vs(rtRow, graphRow), launchRow, vs(graphRow, launchRow)}
	if graph == nil { // left out: the driver has no stream capture
		out = []Row{out[0], out[2]}
	}
	return append(out,
		// A hop is a latency between two kernels, not a rate anyone sends at.
		Row{Name: rowHop, Backend: "cuda", P50: pct(hop, .5), P99: pct(hop, .99)},
		Row{Name: rowPipeline, Backend: "cuda", MsgsPerSec: rate})
}

// pct is d's q quantile as package hist defines it (runtime's Latency
// and package bench's p50/p99: within 0.1%), 0 when d is empty.
func pct(d []time.Duration, q float64) int64 {
	var h hist.Histogram
	for _, v := range d {
		h.Record(v)
	}
	return int64(h.Quantile(q))
}

type rig struct {
	b       *rkcuda.Backend
	v       variant // the variant its kernels run as (the phases' variant column)
	regions []p2pqueue.Region
	kernels []*rk.Kernel
	// timed, when not nil, gets the phases of every kernel launched (each
	// with its timers on), read as close ends them: rows of row, variant
	// v.
	timed  *[]Phase
	row    string
	clocks []p2pqueue.Region // per kernel, when timed
	stages []string          // their stages' names
}

// link makes a link of format f in memory of kind on GPU 0, its slots
// sized for floats float32s.
func (r *rig) link(kind p2pqueue.MemoryKind, f p2pqueue.Format, capacity uint32, floats int) (*p2pqueue.Link, error) {
	cfg := p2pqueue.ConfigForFormat(capacity, 4*floats, f)
	n, err := cfg.RegionSize()
	if err != nil {
		return nil, err
	}
	reg, err := r.b.Alloc(0, n, kind)
	if err != nil {
		return nil, err
	}
	r.regions = append(r.regions, reg)
	return p2pqueue.Init(reg, cfg)
}

// launch starts a ring kernel of spec and activates it.
func (r *rig) launch(ctx context.Context, spec rk.Spec) error {
	if r.timed != nil {
		reg, err := r.b.Alloc(0, 8*phaseWords, p2pqueue.DeviceMemory)
		if err != nil {
			return err
		}
		r.regions = append(r.regions, reg)
		if err := reg.Access.CopyIn(0, make([]byte, 8*phaseWords)); err != nil {
			return err
		}
		spec.PhaseTimers = reg.DeviceAddr
		r.clocks = append(r.clocks, reg)
		r.stages = append(r.stages, spec.Stage.Name)
	}
	k, err := rk.Launch(ctx, r.b, spec)
	if err != nil {
		return err
	}
	r.kernels = append(r.kernels, k)
	return k.Activate(ctx)
}

func (r *rig) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, k := range r.kernels {
		k.Terminate(ctx, false)
	}
	for i, reg := range r.clocks { // the kernels have ended: their timers are stored
		if i < len(r.kernels) {
			if p, err := readPhase(reg, r.row, r.v.name); err == nil {
				p.Stage = r.stages[i]
				*r.timed = append(*r.timed, p)
			}
		}
	}
	for _, reg := range r.regions {
		r.b.Free(reg)
	}
}

// perMessage measures the same work as the round trip done the
// conventional ways, n samples each: per message, copy 64 bytes in from
// pinned host memory, run the stage's one-shot kernel, copy 64 bytes out,
// all queued on one stream, then synchronize it, either issuing the three
// calls (launch) or replaying a CUDA graph captured once from those three
// calls (graph). The two alternate in blocks, so drift on the machine
// falls on both alike.
//
// A driver without stream capture (its graph entry points missing: package
// cuda's ErrUnsupported) has no graph path: graph is nil and why says so.
func perMessage(ctx context.Context, w *oneShot, n int) (launch, graph []time.Duration, why string, err error) {
	paths := []struct {
		name string
		step func() error
		lat  *[]time.Duration
	}{{"launch", w.issue, &launch}}
	x, err := captureGraph(w)
	switch {
	case errors.Is(err, drv.ErrUnsupported):
		why = fmt.Sprintf("this driver cannot capture a stream into a graph (%v)", err)
	case err != nil:
		return nil, nil, "", fmt.Errorf("capturing the graph: %w", err)
	default:
		defer x.Destroy()
		paths = append(paths, struct {
			name string
			step func() error
			lat  *[]time.Duration
		}{"graph", func() error { return x.Launch(w.s) }, &graph})
	}
	// Every path must do the work: check each once against the identity.
	for _, p := range paths {
		if err := w.check(p.step); err != nil {
			return nil, nil, "", fmt.Errorf("%s per message: %w", p.name, err)
		}
		*p.lat = make([]time.Duration, 0, n)
	}
	const block = 500
	warm := max(n/10, 1)
	for len(launch) < n {
		for _, p := range paths {
			k := min(block, n-len(*p.lat))
			if err := w.time(ctx, p.step, warm, nil); err != nil { // rewarm after the other path ran
				return nil, nil, "", err
			}
			if err := w.time(ctx, p.step, k, p.lat); err != nil {
				return nil, nil, "", err
			}
		}
		warm = min(warm, 32)
	}
	slices.Sort(launch)
	slices.Sort(graph)
	return launch, graph, why, nil
}

// oneShot is the launch-per-message setup: the identity stage's one-shot
// kernel, a stream, 256 bytes of device memory (message in at 0, out at
// 64, the kernel's result at 192) and 128 bytes of pinned host memory
// (message in at 0, out at 64).
type oneShot struct {
	c    *drv.Context
	m    *drv.Module
	f    *drv.Function
	s    *drv.Stream
	buf  drv.DevicePtr
	host *drv.HostMemory
}

func newOneShot(b *rkcuda.Backend) (w *oneShot, err error) {
	d := b.Driver()
	dev, err := d.Device(0)
	if err != nil {
		return nil, err
	}
	w = &oneShot{}
	built := w // an error returns a nil w: close what was built
	defer func() {
		if err != nil {
			built.close()
		}
	}()
	if w.c, err = dev.PrimaryContext(); err != nil {
		return nil, err
	}
	ptx, ok := kernels.ShippedPTX("identity")
	if !ok {
		return nil, fmt.Errorf("no shipped PTX for the identity stage")
	}
	if w.m, err = w.c.LoadModule("identity.ptx", ptx); err != nil {
		return nil, err
	}
	if w.f, err = w.m.Function(kernels.Symbol("identity") + "_test"); err != nil {
		return nil, err
	}
	if w.s, err = w.c.NewStream(); err != nil {
		return nil, err
	}
	if w.buf, err = w.c.Alloc(256); err != nil {
		return nil, err
	}
	if w.host, err = w.c.AllocHost(128, false); err != nil {
		return nil, err
	}
	copy(w.host.Bytes, kernels.EncodeFloats(nil, make([]float32, 16)))
	return w, nil
}

func (w *oneShot) close() {
	if w.c == nil {
		return
	}
	if w.s != nil {
		w.s.Synchronize()
		w.s.Destroy()
	}
	if w.host != nil {
		w.c.FreeHost(w.host)
	}
	if w.buf != 0 {
		w.c.Free(w.buf)
	}
	if w.m != nil {
		w.m.Unload()
	}
	w.c.Release()
}

// issue queues one message's work: copy in, kernel, copy out.
func (w *oneShot) issue() error {
	if err := w.c.CopyToDeviceAsync(w.buf, w.host, 0, 64, w.s); err != nil {
		return err
	}
	// (params, state, in, n, out, out_cap, ret)
	if err := w.c.Launch(w.f, drv.Dim3{X: 1, Y: 1, Z: 1}, drv.Dim3{X: 32, Y: 1, Z: 1}, 0, w.s,
		w.buf, w.buf, w.buf, int32(16), w.buf+64, int32(16), w.buf+192); err != nil {
		return err
	}
	return w.c.CopyFromDeviceAsync(w.host, 64, w.buf+64, 64, w.s)
}

// captureGraph is (*oneShot).capture; a test stands in a driver without
// stream capture.
var captureGraph = (*oneShot).capture

// capture records issue on the stream into a graph and instantiates it.
func (w *oneShot) capture() (*drv.GraphExec, error) {
	if err := w.s.BeginCapture(); err != nil {
		return nil, err
	}
	if err := w.issue(); err != nil {
		if g, err := w.s.EndCapture(); err == nil {
			g.Destroy()
		}
		return nil, err
	}
	g, err := w.s.EndCapture()
	if err != nil {
		return nil, err
	}
	defer g.Destroy()
	return g.Instantiate()
}

// check runs step once with a fresh message and verifies that the copy out
// brought the identity of the copy in back.
func (w *oneShot) check(step func() error) error {
	in := make([]float32, 16)
	for i := range in {
		in[i] = float32(i) + 0.5
	}
	copy(w.host.Bytes[:64], kernels.EncodeFloats(nil, in))
	clear(w.host.Bytes[64:])
	if err := step(); err != nil {
		return err
	}
	if err := w.s.Synchronize(); err != nil {
		return err
	}
	if string(w.host.Bytes[64:128]) != string(w.host.Bytes[:64]) {
		return fmt.Errorf("the message came back as % x, want % x", w.host.Bytes[64:128], w.host.Bytes[:64])
	}
	return nil
}

// time runs step and a synchronize k times, appending each one's latency
// to lat unless lat is nil (a warm-up).
func (w *oneShot) time(ctx context.Context, step func() error, k int, lat *[]time.Duration) error {
	for range k {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		t0 := time.Now()
		if err := step(); err != nil {
			return err
		}
		if err := w.s.Synchronize(); err != nil {
			return err
		}
		if lat != nil {
			*lat = append(*lat, time.Since(t0))
		}
	}
	return nil
}

// hop times stage 1's done to stage 2's dequeue of the same message on the
// device clock: two ring kernels on one GPU joined by a device-memory link.
// Both timestamps are %globaltimer readings converted with the device's one
// calibration offset, so their difference is the device's, whatever the
// host does meanwhile.
//
// Messages go one at a time, the next once stage 2 has counted the last
// (its control block's processed counter), so the hop is measured
// unloaded. The records arrive later: each kernel's trace pump parks
// between polls of its trace ring (up to 10 ms; the device cannot ring a
// host doorbell), and the two pumps run independently, so stage 2's record
// of a message often comes before stage 1's. Records are kept by message
// ID from both sides and paired at the end, and the trace rings are sized
// for the whole run so a parked pump never makes a kernel wait for trace
// space, which would delay the publish the hop is measured across.
func hop(ctx context.Context, b *rkcuda.Backend, n int, v variant) ([]time.Duration, error) {
	r := &rig{b: b, v: v}
	defer r.close()
	in, err := r.link(p2pqueue.MappedPinnedMemory, v.format, 64, 16)
	if err != nil {
		return nil, err
	}
	mid, err := r.link(p2pqueue.DeviceMemory, v.format, 64, 16)
	if err != nil {
		return nil, err
	}
	warm := n / 10
	total := n + warm
	recs := newHopRecords()
	tcap := traceCapacity(total)
	for _, spec := range []rk.Spec{
		{Stage: rk.Stage{Name: "a", Op: "identity"}, ID: 1, In: []*p2pqueue.Link{in}, Out: []*p2pqueue.Link{mid}, OutLocal: []bool{true},
			TraceCapacity: tcap, OnTrace: func(t rk.TraceRecord) { recs.note(0, t.ID, t.Done) }},
		{Stage: rk.Stage{Name: "b", Op: "identity"}, ID: 2, In: []*p2pqueue.Link{mid}, InLocal: []bool{true},
			TraceCapacity: tcap, OnTrace: func(t rk.TraceRecord) { recs.note(1, t.ID, t.Dequeued) }},
	} {
		v.set(&spec)
		if err := r.launch(ctx, spec); err != nil {
			return nil, err
		}
	}
	second := r.kernels[1]
	send, _ := in.Producer()
	msg := p2pqueue.Message{Header: p2pqueue.Header{Flags: p2pqueue.FlagSampled}, Payload: kernels.EncodeFloats(nil, make([]float32, 16))}
	base := second.Status().Processed
	for i := range total {
		msg.ID = uint64(i)
		if err := send.Enqueue(ctx, &msg); err != nil {
			return nil, err
		}
		deadline := time.Now().Add(5 * time.Second)
		for spins := 0; second.Status().Processed < base+uint64(i)+1; spins++ {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if spins%64 == 63 {
				if time.Now().After(deadline) {
					return nil, fmt.Errorf("message %d: the second kernel did not process it in 5 s", i)
				}
				runtime.Gosched()
			}
		}
	}
	lat, missing, err := recs.wait(ctx, uint64(warm), uint64(total), 5*time.Second)
	if err != nil {
		return nil, err
	}
	if missing > 0 {
		return nil, fmt.Errorf("%d of %d messages lack a trace record from one of the kernels", missing, n)
	}
	slices.Sort(lat)
	return lat, nil
}

// traceCapacity is a trace ring length, a power of two, that holds total
// records: at least the default 1024, at most 1<<14 (3 MiB of the
// backend's 32 MiB pinned arena per kernel; a pump parked 10 ms falls
// behind by a few thousand records at most, one message at a time).
func traceCapacity(total int) int {
	c := 1024
	for c < total && c < 1<<14 {
		c <<= 1
	}
	return c
}

// hopRecords collects the two kernels' trace timestamps by message ID.
// The pumps call note; it never blocks them.
type hopRecords struct {
	mu   sync.Mutex
	at   [2]map[uint64]time.Time // [0]: stage 1 done, [1]: stage 2 dequeued
	bell chan struct{}           // capacity 1: "something arrived", sent without waiting
}

func newHopRecords() *hopRecords {
	return &hopRecords{at: [2]map[uint64]time.Time{{}, {}}, bell: make(chan struct{}, 1)}
}

func (h *hopRecords) note(side int, id uint64, t time.Time) {
	h.mu.Lock()
	h.at[side][id] = t
	h.mu.Unlock()
	select {
	case h.bell <- struct{}{}:
	default: // a wake-up is pending already
	}
}

// pairs returns the hops of messages [from, to) whose records from both
// sides are in, and how many in that range still lack one.
func (h *hopRecords) pairs(from, to uint64) (lat []time.Duration, missing int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	lat = make([]time.Duration, 0, to-from)
	for id := from; id < to; id++ {
		done, ok1 := h.at[0][id]
		deq, ok2 := h.at[1][id]
		if !ok1 || !ok2 {
			missing++
			continue
		}
		lat = append(lat, deq.Sub(done))
	}
	return lat, missing
}

// wait waits until every message in [from, to) has both records, or no
// record came for idle, or ctx ends; it returns what it has then.
func (h *hopRecords) wait(ctx context.Context, from, to uint64, idle time.Duration) ([]time.Duration, int, error) {
	t := time.NewTimer(idle)
	defer t.Stop()
	for {
		lat, missing := h.pairs(from, to)
		if missing == 0 {
			return lat, 0, nil
		}
		select {
		case <-h.bell:
			t.Reset(idle)
		case <-t.C:
			return lat, missing, nil
		case <-ctx.Done():
			return nil, 0, ctx.Err()
		}
	}
}

// pipeline sends total 64-byte messages in batches from one goroutine and
// receives them in another, through stages ring kernels on GPU 0: 3 (x2,
// sqrt, +1, joined by links in device memory), 1 (identity), 0 (a sink
// kernel: done when it has processed them all) or -1 (no kernel: the
// receiver reads the sender's link itself).
//
// It returns messages per second end to end. Every kernel runs as
// variant v, every link of v's format. With phases not nil, each kernel
// runs with its phase timers on and its phases (row
// variant/pipeline-3stage-64B) are appended there once they have ended.
func pipeline(ctx context.Context, b *rkcuda.Backend, total, stages int, v variant, phases *[]Phase) (float64, error) {
	r := &rig{b: b, v: v, timed: phases, row: rowVarPipeline}
	defer r.close()
	in, err := r.link(p2pqueue.MappedPinnedMemory, v.format, 4096, 16)
	if err != nil {
		return 0, err
	}
	out := in
	var sink *rk.Kernel
	switch stages {
	case 3:
		l1, err := r.link(p2pqueue.DeviceMemory, v.format, 4096, 16)
		if err != nil {
			return 0, err
		}
		l2, err := r.link(p2pqueue.DeviceMemory, v.format, 4096, 16)
		if err != nil {
			return 0, err
		}
		if out, err = r.link(p2pqueue.MappedPinnedMemory, v.format, 4096, 16); err != nil {
			return 0, err
		}
		specs := []rk.Spec{
			{Stage: rk.Stage{Name: "x2", Op: "scale", Params: []float32{2}}, ID: 1, In: []*p2pqueue.Link{in}, Out: []*p2pqueue.Link{l1}, OutLocal: []bool{true}},
			{Stage: rk.Stage{Name: "sqrt", Op: "sqrt"}, ID: 2, In: []*p2pqueue.Link{l1}, InLocal: []bool{true}, Out: []*p2pqueue.Link{l2}, OutLocal: []bool{true}},
			{Stage: rk.Stage{Name: "plus1", Op: "offset", Params: []float32{1}}, ID: 3, In: []*p2pqueue.Link{l2}, InLocal: []bool{true}, Out: []*p2pqueue.Link{out}},
		}
		for _, s := range specs {
			v.set(&s)
			if err := r.launch(ctx, s); err != nil {
				return 0, err
			}
		}
	case 1:
		if out, err = r.link(p2pqueue.MappedPinnedMemory, v.format, 4096, 16); err != nil {
			return 0, err
		}
		s := rk.Spec{Stage: rk.Stage{Name: "id", Op: "identity"}, ID: 1, In: []*p2pqueue.Link{in}, Out: []*p2pqueue.Link{out}}
		v.set(&s)
		if err := r.launch(ctx, s); err != nil {
			return 0, err
		}
	case 0:
		s := rk.Spec{Stage: rk.Stage{Name: "sink", Op: "identity"}, ID: 1, In: []*p2pqueue.Link{in}}
		v.set(&s)
		if err := r.launch(ctx, s); err != nil {
			return 0, err
		}
		sink = r.kernels[len(r.kernels)-1]
		out = nil
	}
	send, _ := in.Producer()
	var recv *p2pqueue.Consumer
	if out != nil {
		recv, _ = out.Consumer()
	}
	payload := kernels.EncodeFloats(nil, make([]float32, 16))
	// The sender stops with ctx; on an early return it is cancelled and
	// waited for before r.close frees the links it writes to.
	ctx, cancel := context.WithCancel(ctx)
	var sendErr error
	sent := make(chan struct{})
	defer func() {
		cancel()
		<-sent
	}()
	start := time.Now()
	go func() {
		defer close(sent)
		batch := make([]p2pqueue.Message, 256)
		for i := range batch {
			batch[i].Payload = payload
		}
		for i := 0; i < total; {
			k, err := send.EnqueueBatch(ctx, batch[:min(len(batch), total-i)])
			i += k
			if err != nil {
				sendErr = err
				return
			}
		}
	}()
	msgs := make([]p2pqueue.Message, 256)
	for got := 0; got < total; {
		if sink != nil { // the sink's own count says when it has them all
			if got = int(sink.Status().Processed); got < total {
				if ctx.Err() != nil {
					return 0, ctx.Err()
				}
				time.Sleep(20 * time.Microsecond)
			}
			continue
		}
		k, err := recv.DequeueBatch(ctx, msgs)
		got += k
		if err != nil {
			return 0, fmt.Errorf("after %d messages: %w", got, err)
		}
	}
	el := time.Since(start)
	<-sent
	if sendErr != nil {
		return 0, sendErr
	}
	return float64(total) / el.Seconds(), nil
}
