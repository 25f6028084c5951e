package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/ringactor/ringactor/internal/demo"
	"github.com/ringactor/ringactor/internal/otelsetup"
	ra "github.com/ringactor/ringactor/runtime"
)

// top runs the demo workload (the main job's pipeline, fed without pause)
// and shows its devices, links and stages every -interval, as kubectl's
// and nvidia-smi's views do:
//
//   - on a terminal, on the alternate screen, each frame drawn over the
//     last and as wide as the terminal (columns that do not fit are left
//     out), until q (or Ctrl-C, or -duration); the screen is then as it
//     was, and the demo's account is printed below it;
//   - to a pipe or a file, plain frames, each under its header line with
//     the time, $COLUMNS (else 120) wide, and no escape codes, like
//     `nvidia-smi -l` and `top -b`;
//   - with -once, one plain frame after one interval.
//
// -duration counts from the first frame, so at least one is shown however
// long setup takes. -pprof ADDR serves Go's profiles (/debug/pprof/) on
// ADDR while top runs.
func top(ctx context.Context, args []string, out, errOut io.Writer) error {
	return runTop(ctx, args, topIO{in: os.Stdin, out: out, errOut: errOut, interrupt: raiseInterrupt})
}

// topIO is what top reads keys from and writes to.
type topIO struct {
	in     *os.File // keys, read when in and out are terminals; nil: none
	out    io.Writer
	errOut io.Writer
	// interrupt is called on Ctrl-C read from in (raw mode turns it
	// into a byte, not a signal): it raises the interrupt that ends ctx
	// and reports whether it did; if not, top ends as on q.
	interrupt func() bool
}

func runTop(ctx context.Context, args []string, tio topIO) error {
	out, errOut := tio.out, tio.errOut
	fs := newFlags("top")
	backend := fs.String("backend", "auto", "auto, sim or cuda")
	devs := fs.String("devices", "auto", `devices of the demo's three stages: ids or "cpu", one for all, or auto`)
	interval := fs.Duration("interval", time.Second, "time between frames")
	duration := fs.Duration("duration", 0, "stop this long after the first frame (0: at q or Ctrl-C); setup is not counted")
	once := fs.Bool("once", false, "print one plain frame after one interval, and exit")
	tel := otelsetup.Register(fs, "ringactor-top") // -trace, -metrics, -metrics-addr, -pprof
	if err := parseFlags(fs, args, out, 0); err != nil {
		return err
	}
	if err := tel.Check(); err != nil {
		return &usageError{cmd: "top", err: err}
	}
	if *interval <= 0 || *duration < 0 {
		return usagef("top", "-interval %v, -duration %v: give a positive interval and a duration of 0 or more", *interval, *duration)
	}
	// Exporters write to errOut: stdout is the display.
	setup, err := tel.Start(ctx, errOut)
	if err != nil {
		return err
	}
	defer setup.Shutdown(context.Background())
	if setup.PprofAddr != nil {
		fmt.Fprintf(errOut, "ringactor top: profiles at http://%s/debug/pprof/\n", setup.PprofAddr)
	}
	// Setup (devices, Build, Start) is bounded by Ctrl-C and topSetup, not
	// by -duration, which counts from the first frame: a slow machine's
	// setup takes nothing from the display.
	setupCtx, endSetup := context.WithTimeout(ctx, topSetup)
	defer endSetup()
	rt, ids, err := guideRuntime(*backend, *devs, errOut, setup)
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

	// The terminal view opens once the demo runs: setup's messages stay
	// on the screen, and Ctrl-C during setup is a plain interrupt.
	tty, isTTY := isTerminal(out)
	var scr *screen
	var keys <-chan byte
	if isTTY && !*once {
		if scr, err = openScreen(tty, tio.in); err != nil {
			stopFeed()
			return errors.Join(err, <-fed, p.Close(context.Background(), false))
		}
		defer scr.close()
		keys = scr.keys
	}
	// finish leaves the terminal view, stops the demo (drained) and
	// prints its account where it stays: below the screen as it was.
	finish := func(err error) error {
		if scr != nil {
			err = errors.Join(err, scr.close())
		}
		stopFeed()
		ferr := <-fed
		cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cerr := p.Close(cctx, true)
		st := p.Stats()
		fmt.Fprintf(out, "demo: sent %d, delivered %d, dead-lettered %d, in flight %d\n", st.Sent, st.Delivered, st.DeadLettered, st.InFlight)
		return errors.Join(err, ferr, cerr)
	}

	rt.Metrics() // the first frame's interval starts now
	tick := time.NewTicker(*interval)
	defer tick.Stop()
	ticks := tick.C
	var end <-chan time.Time         // -duration's timer, started at the first frame
	var interrupted <-chan time.Time // after a Ctrl-C key: the interrupt raised is late
	frames := 0
	for {
		select {
		case <-ctx.Done():
			return finish(nil)
		case <-end:
			return finish(nil)
		case <-interrupted: // raised, yet ctx did not end: stop as on q
			return finish(nil)
		case k := <-keys:
			switch k {
			case 'q', 'Q':
				return finish(nil)
			case 0x03: // Ctrl-C in raw mode
				// Leave the screen first: whatever the interrupt
				// does, the terminal is as it was.
				if scr.close() != nil || tio.interrupt == nil || !tio.interrupt() {
					return finish(nil) // close's error is finish's
				}
				keys, ticks = nil, nil // no more frames: wait for ctx
				t := time.NewTimer(time.Second)
				defer t.Stop()
				interrupted = t.C
			}
			continue
		case <-ticks:
		}
		m := rt.Metrics()
		var werr error
		switch {
		case *once:
			width := outputWidth()
			if isTTY {
				width, _ = terminalSize(tty)
			}
			_, werr = io.WriteString(out, strings.Join(frameLines(rt, m, width), "\n")+"\n")
			return finish(werr)
		case scr != nil:
			width, height := terminalSize(tty)
			werr = scr.draw(append(frameLines(rt, m, width), "", cut(scr.hint(), width)), height)
		default:
			sep := ""
			if frames > 0 {
				sep = "\n"
			}
			_, werr = io.WriteString(out, sep+strings.Join(frameLines(rt, m, outputWidth()), "\n")+"\n")
		}
		if werr != nil { // the terminal or pipe is gone
			return finish(fmt.Errorf("top: writing a frame: %w", werr))
		}
		frames++
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
