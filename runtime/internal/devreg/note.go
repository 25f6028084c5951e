package devreg

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
)

// NoteMessage is the message of the record that says which devices a
// runtime found.
const NoteMessage = "ringactor devices"

// found is what Open found: the note's parts.
type found struct {
	kind    string // the backend kind
	gpus    int    // its devices
	devices string // the kind's line on them, with their peer pairs
	cpu     string // the CPU's part
	// passedOver says why "auto" passed over each kind before this one.
	passedOver []string
	given      bool // the backend came in Config.Backend
}

// note is the one line (Registry.Note): "ringactor: <why others were
// passed over>; <devices>; <the CPU>".
func (f found) note() string {
	s := f.devices
	if f.given {
		s += ", on the backend given in Config"
	}
	if len(f.passedOver) > 0 {
		s = strings.Join(f.passedOver, "; ") + "; " + s
	}
	return "ringactor: " + s + "; " + f.cpu
}

// report says f: one Info record on opts.Logger (NoteMessage, with the
// backend, its device count and line, the CPU's part, and why other kinds
// were passed over, when any were), or else the one line on opts.Log;
// nothing when both are nil.
func report(opts Options, f found) {
	switch {
	case opts.Logger != nil:
		attrs := []slog.Attr{slog.String("backend", f.kind), slog.Int("gpus", f.gpus),
			slog.String("devices", f.devices), slog.String("cpu", f.cpu)}
		if len(f.passedOver) > 0 {
			attrs = append(attrs, slog.String("passed_over", strings.Join(f.passedOver, "; ")))
		}
		if f.given {
			attrs = append(attrs, slog.Bool("config_backend", true))
		}
		opts.Logger.LogAttrs(context.Background(), slog.LevelInfo, NoteMessage, attrs...)
	case opts.Log != nil:
		fmt.Fprintln(opts.Log, f.note())
	}
}

// Logger is l, or a logger that discards everything when l is nil, with
// the attribute component=name: what a part of the runtime (protoactor's
// actor system, its remote and cluster) logs through.
func Logger(l *slog.Logger, name string) *slog.Logger {
	if l == nil {
		return slog.New(slog.DiscardHandler)
	}
	return l.With("component", name)
}
