package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/ringactor/ringactor/internal/demo"
	ra "github.com/ringactor/ringactor/runtime"
)

// top runs the demo workload (the main job's pipeline, fed without pause)
// and shows its devices and stages every -interval: a terminal view that
// redraws in place until Ctrl-C or -duration (counted from the first
// frame, so at least one is shown however long setup takes), or with
// -once one plain frame after one interval.
func top(ctx context.Context, args []string, out, errOut io.Writer) error {
	fs := flag.NewFlagSet("top", flag.ContinueOnError)
	fs.SetOutput(errOut)
	backend := fs.String("backend", "auto", "auto, sim or cuda")
	devs := fs.String("devices", "auto", `devices of the demo's three stages: ids or "cpu", one for all, or auto`)
	interval := fs.Duration("interval", time.Second, "time between frames")
	duration := fs.Duration("duration", 0, "stop this long after the first frame (0: at Ctrl-C); setup is not counted")
	once := fs.Bool("once", false, "print one frame, without redrawing, after one interval, and exit")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *interval <= 0 || *duration < 0 {
		return fmt.Errorf("-interval %v, -duration %v: give a positive interval and a duration of 0 or more", *interval, *duration)
	}
	// Setup (devices, Build, Start) is bounded by Ctrl-C and topSetup, not
	// by -duration, which counts from the first frame: a slow machine's
	// setup takes nothing from the display.
	setupCtx, endSetup := context.WithTimeout(ctx, topSetup)
	defer endSetup()
	rt, ids, err := guideRuntime(*backend, *devs, errOut)
	if err != nil {
		return err
	}
	defer rt.Close()
	var delivered atomic.Uint64
	spec := demo.Guide("demo", ids)
	spec.SampleRatio = 0.001
	spec.Deliver = ra.Sink{Func: func(ra.Result) { delivered.Add(1) }}
	p, err := rt.Build(setupCtx, spec)
	if err != nil {
		return fmt.Errorf("top: setting up the demo (bounded by %v, or Ctrl-C): %w", topSetup, err)
	}
	if err := p.Start(setupCtx); err != nil {
		p.Close(context.Background(), false)
		return fmt.Errorf("top: starting the demo (bounded by %v, or Ctrl-C): %w", topSetup, err)
	}
	endSetup()
	feedCtx, stopFeed := context.WithCancel(ctx)
	fed := make(chan error, 1)
	go func() { fed <- feed(feedCtx, p) }()
	stopAll := func() error {
		stopFeed()
		ferr := <-fed
		cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cerr := p.Close(cctx, true)
		st := p.Stats()
		fmt.Fprintf(out, "demo: sent %d, delivered %d, dead-lettered %d, in flight %d\n", st.Sent, st.Delivered, st.DeadLettered, st.InFlight)
		return errors.Join(ferr, cerr)
	}

	rt.Metrics() // the first frame's interval starts now
	tick := time.NewTicker(*interval)
	defer tick.Stop()
	var end <-chan time.Time // -duration's timer, started at the first frame
	for {
		select {
		case <-ctx.Done():
			return stopAll()
		case <-end:
			return stopAll()
		case <-tick.C:
		}
		m := rt.Metrics()
		if *once {
			writeFrame(out, rt, m)
			return stopAll()
		}
		var b strings.Builder
		b.WriteString("\x1b[H\x1b[2J") // home, clear: redraw in place
		writeFrame(&b, rt, m)
		b.WriteString("Ctrl-C to stop\n")
		io.WriteString(out, b.String())
		if *duration > 0 && end == nil {
			t := time.NewTimer(*duration)
			defer t.Stop()
			end = t.C
		}
	}
}

// topSetup bounds top's setup (devices, Build, Start): generous, since a
// loaded machine's first device open may take seconds; Ctrl-C ends it
// sooner.
const topSetup = 2 * time.Minute

// feed sends the demo's messages in batches until ctx ends. A batch is
// sent whole (the running pipeline takes it), so stopping cuts none short.
func feed(ctx context.Context, p *ra.Pipeline) error {
	batch := make([]ra.Data, 64)
	var id uint64
	for ctx.Err() == nil {
		for i := range batch {
			id++
			batch[i] = ra.Data{ID: id, Floats: []float32{float32(id % 1000), 1, 2, 3}}
		}
		if _, err := p.SendBatch(context.Background(), batch); err != nil {
			return err
		}
	}
	return nil
}

// writeFrame prints one snapshot: a row per device, a row per link kind
// in use, a row per stage.
func writeFrame(w io.Writer, rt *ra.Runtime, m ra.Metrics) {
	fmt.Fprintf(w, "ringactor top: %s backend, %s, over %v\n\n", rt.Registry().BackendName(), m.At.Format("15:04:05"), m.Interval.Round(time.Millisecond))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "device\tname\tkind\tutil\tkernels\truntime mem\tused\ttotal\t")
	for _, d := range m.Devices {
		util := "-"
		if d.Utilization >= 0 {
			util = fmt.Sprintf("%.1f%%", 100*d.Utilization)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t\n", d.Device, d.Name, d.Kind, util, d.Kernels, size(d.RuntimeBytes), size(d.UsedBytes), size(d.TotalBytes))
	}
	tw.Flush()
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "device\tlink kind\tlinks\tmessages\tmsg/s\tMB/s\t")
	for _, d := range m.Devices {
		for _, l := range d.Links {
			fmt.Fprintf(tw, "%d\t%s\t%d\t%d\t%.0f\t%.2f\t\n", d.Device, l.Kind, l.Links, l.Messages, l.MessagesPerSecond, l.BytesPerSecond/1e6)
		}
	}
	tw.Flush()
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "pipeline\tstage\tdevice\tprocessed\tmsg/s\tqueued\tbusy\t")
	for _, s := range m.Stages {
		busy := "-"
		if s.Busy >= 0 {
			busy = fmt.Sprintf("%.1f%%", 100*s.Busy)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%.0f\t%d\t%s\t\n", s.Pipeline, s.Stage, s.Device, s.Processed, s.Rate, s.Queued, busy)
	}
	tw.Flush()
}

// size says a byte count in the unit that suits it.
func size(n uint64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
