// Command ringactor inspects what ringactor sees and does:
//
//	ringactor devices [-json] [-backend auto|sim|cuda]
//	ringactor describe [-devices 0,1,2] [-backend auto|sim|cuda]
//	ringactor bench [-quick] [-json] [-only PREFIX] [-scale F] [-quiet] [-backend ...]
//	ringactor bench-gpu [-json] [-samples N] [-messages N] [-variant-limit D]
//	ringactor top [-once] [-duration D] [-interval D] [-devices auto] [-backend ...]
//	ringactor version
//	ringactor help [command]
//
// Every command takes -h (or -help, --help): its usage on stdout, exit
// status 0; so does `ringactor help <command>`. `ringactor -version`
// is `ringactor version`. Errors print one line on stderr,
// "ringactor: <command>: <what went wrong>". The exit status is 0 on
// success, 1 on an error while running, 2 on a usage error (an unknown
// command, flag or help topic, a bad flag value, an argument the command
// does not take), and 130 when interrupted (Ctrl-C; 143 on SIGTERM). A
// second Ctrl-C ends the command at once.
//
// devices lists the devices of the backend chosen as the runtime would
// choose it (the CUDA driver's GPUs, else simulated devices) with their
// topology matrix as nvidia-smi topo -m prints it (its legend, and each
// GPU's CPU and NUMA affinity); describe builds the main job's pipeline on
// the given device ids and shows where each link lives, without running
// it; bench measures ringactor beside protoactor-go actors, goroutines and
// channels (and, with a GPU, a kernel launch per message and a CUDA graph
// replayed per message) in one run, as ratios, with its progress and time
// left on stderr; top runs a demo workload and shows every device's
// utilization, memory and link traffic and every stage's rate, redrawn
// each interval (Runtime.Metrics).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/ringactor/ringactor/internal/demo"
	"github.com/ringactor/ringactor/internal/devlist"
	"github.com/ringactor/ringactor/internal/nodeproc"
	"github.com/ringactor/ringactor/internal/otelsetup"
	"github.com/ringactor/ringactor/internal/stdio"
	rk "github.com/ringactor/ringactor/ringkernel"
	ra "github.com/ringactor/ringactor/runtime"
	"github.com/ringactor/ringactor/version"
)

// The exit statuses.
const (
	exitOK    = 0
	exitError = 1 // the command failed while running
	exitUsage = 2 // the command line is wrong
	// A command ended by a signal exits 128 + the signal's number, as a
	// shell reports a process the signal killed: 130 for SIGINT (Ctrl-C),
	// 143 for SIGTERM.
	exitSignal = 128
)

func main() {
	out := stdio.Claim() // stdout is ours: -json prints a document there
	nodeproc.Main()      // the remote benchmark starts this binary again as its peer node
	ctx, stop := interruptible()
	args := os.Args[1:]
	err := run(ctx, args, out, os.Stderr)
	stop()
	code := exitCode(ctx, err)
	if code != exitOK && err != nil {
		fmt.Fprintln(os.Stderr, errorLine(commandOf(args), err, code))
	}
	os.Exit(code)
}

// interrupted is the cause of the context interruptible cancels: the
// signal that ended the command.
type interrupted struct{ sig os.Signal }

func (e interrupted) Error() string { return "interrupted (" + e.sig.String() + ")" }

// interruptible returns a context canceled, with an interrupted cause, by
// the first SIGINT or SIGTERM; after it the signals act as they would
// without the command (a second Ctrl-C ends it at once).
func interruptible() (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(context.Background())
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case s := <-sigs:
			signal.Stop(sigs)
			cancel(interrupted{s})
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(sigs)
		close(done)
	}
}

// exitCode maps what a command returned to the exit status: 130 (or 143)
// once a signal interrupted it, whatever it returned; 0 for success and
// for help (flag.ErrHelp); 2 for a usage error; 1 for any other error.
func exitCode(ctx context.Context, err error) int {
	var sig interrupted
	if errors.As(context.Cause(ctx), &sig) {
		if s, ok := sig.sig.(syscall.Signal); ok {
			return exitSignal + int(s)
		}
		return exitSignal + int(syscall.SIGINT)
	}
	var ue *usageError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return exitOK
	case errors.As(err, &ue):
		return exitUsage
	}
	return exitError
}

// usageError is a wrong command line: exit status 2, and a hint to the
// command's help after the error line.
type usageError struct {
	cmd string // the command whose usage it breaks; "" for the one run
	err error
}

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

func usagef(cmd, format string, a ...any) error {
	return &usageError{cmd: cmd, err: fmt.Errorf(format, a...)}
}

// checkBackend is a usage error unless name is auto or a backend kind
// this binary has (sim, cuda).
func checkBackend(name string) error {
	names := []string{"auto"}
	for _, k := range rk.Kinds() {
		if k.Name == name || name == "auto" {
			return nil
		}
		names = append(names, k.Name)
	}
	return usagef("", "-backend %q: choose %s", name, strings.Join(names, ", "))
}

// commandOf names the command args run, for the error line: "" when
// there is none, or it is not one.
func commandOf(args []string) string {
	if len(args) > 0 && lookup(args[0]) != nil {
		return args[0]
	}
	return ""
}

// errorLine is how the command reports err: one line, named once,
// "ringactor: <cmd>: <message>" (interrupted when a signal ended it), and
// after a usage error a second line naming the help to read.
func errorLine(cmd string, err error, code int) string {
	msg := err.Error()
	if code > exitSignal {
		msg = "interrupted"
	}
	var ue *usageError
	if errors.As(err, &ue) && ue.cmd != "" {
		cmd = ue.cmd
	}
	line := "ringactor: " + cleanMessage(cmd, msg)
	if cmd != "" {
		line = "ringactor: " + cmd + ": " + cleanMessage(cmd, msg)
	}
	if code == exitUsage {
		topic := ""
		if cmd != "" && cmd != "help" {
			topic = " " + cmd
		}
		line += "\nRun 'ringactor help" + topic + "' for usage."
	}
	return line
}

// cleanMessage drops the prefixes the line already has or repeats from
// msg: the packages' own "ringactor: " wherever a part of the message
// begins with it (the runtime's errors do, and wrapping puts them
// mid-line: "-devices: ringactor: no such device"), cmd's name at its
// start, and a part that repeats the part before it ("cuda: cuda: ...").
func cleanMessage(cmd, msg string) string {
	parts := strings.Split(msg, ": ")
	var kept []string
	for i, p := range parts {
		last := i == len(parts)-1
		switch {
		case !last && p == "ringactor":
		case !last && len(kept) == 0 && p == cmd:
		case !last && len(kept) > 0 && p == kept[len(kept)-1]:
		default:
			kept = append(kept, p)
		}
	}
	return strings.Join(kept, ": ")
}

// commandDoc is one command's help: its flags' synopsis and what it does.
type commandDoc struct {
	name, args, summary string
}

// commands are ringactor's commands, in the order help lists them.
var commands = []commandDoc{
	{"devices", "[-json] [-backend auto|sim|cuda]",
		"list the devices (GPUs and the CPU), their topology matrix as nvidia-smi topo -m prints it, and each one's CPU and NUMA affinity"},
	{"describe", "[-devices 0,1,2] [-backend auto|sim|cuda]",
		"show where the main job's pipeline would place its stages and links on -devices, without running it"},
	{"bench", "[-quick] [-json] [-only PREFIX] [-scale F] [-quiet] [-cpuprofile FILE] [-backend auto|sim|cuda]",
		"run every benchmark this machine can, beside its baseline (progress and time left on stderr)"},
	{"bench-gpu", "[-json] [-samples N] [-messages N] [-variant-limit D]",
		"ring kernels on GPU 0 vs a kernel launch and a CUDA graph replay per message, and vs the floors measured in the same run (needs a GPU or the emulated driver)"},
	{"top", "[-once] [-duration D] [-interval D] [-devices auto] [-backend auto|sim|cuda] [-trace K] [-metrics K] [-pprof ADDR]",
		"live view of devices, links and stages under a demo workload"},
	{"version", "", "print ringactor's version, commit and Go version"},
	{"help", "[command]", "print this help, or a command's"},
}

// runFunc is a command: it reads its own flags from args.
type runFunc func(ctx context.Context, args []string, out, errOut io.Writer) error

// lookup is the command called name, nil if there is none.
func lookup(name string) runFunc {
	switch name {
	case "devices":
		return func(_ context.Context, args []string, out, errOut io.Writer) error { return devices(args, out, errOut) }
	case "describe":
		return describe
	case "bench":
		return benchCmd
	case "bench-gpu":
		return benchGPU
	case "top":
		return top
	case "version":
		return versionCmd
	case "help":
		return helpCmd
	}
	return nil
}

func docOf(name string) commandDoc {
	for _, c := range commands {
		if c.name == name {
			return c
		}
	}
	return commandDoc{name: name}
}

func commandNames() string {
	names := make([]string, len(commands))
	for i, c := range commands {
		names[i] = c.name
	}
	return strings.Join(names, ", ")
}

func printUsage(w io.Writer) {
	fmt.Fprint(w, "usage: ringactor <command> [flags] | ringactor -version | ringactor help [command]\n\ncommands:\n")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-10s %s\n", c.name, c.summary)
	}
	fmt.Fprint(w, "\nRun 'ringactor help <command>' (or ringactor <command> -h) for a command's flags.\n"+
		"Exit status: 0 ok, 1 error, 2 usage error, 130 interrupted (Ctrl-C).\n")
}

func run(ctx context.Context, args []string, out, errOut io.Writer) error {
	if len(args) == 0 {
		printUsage(errOut)
		return usagef("", "no command given")
	}
	switch args[0] {
	case "-h", "-help", "--help":
		printUsage(out)
		return nil
	case "-version", "--version":
		return versionCmd(ctx, args[1:], out, errOut)
	}
	cmd := lookup(args[0])
	if cmd == nil {
		if strings.HasPrefix(args[0], "-") {
			return usagef("", "flag provided but not defined: %s (flags follow the command: ringactor <command> [flags])", args[0])
		}
		return usagef("", "unknown command %q; the commands are %s", args[0], commandNames())
	}
	return cmd(ctx, args[1:], out, errOut)
}

// helpCmd prints the usage, or with a topic that command's, as its -h does.
func helpCmd(ctx context.Context, args []string, out, errOut io.Writer) error {
	fs := newFlags("help")
	if err := parseFlags(fs, args, out, 1); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		printUsage(out)
		return nil
	}
	topic := fs.Arg(0)
	cmd := lookup(topic)
	if cmd == nil {
		return usagef("help", "unknown help topic %q; the topics are %s", topic, commandNames())
	}
	err := cmd(ctx, []string{"-h"}, out, errOut)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	return err
}

func versionCmd(_ context.Context, args []string, out, _ io.Writer) error {
	fs := newFlags("version")
	if err := parseFlags(fs, args, out, 0); err != nil {
		return err
	}
	fmt.Fprintln(out, "ringactor "+version.Read().String())
	return nil
}

// newFlags is a command's flag set: parseFlags prints its usage and
// reports its errors.
func newFlags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // parseFlags says what went wrong, once
	fs.Usage = func() {}
	return fs
}

// parseFlags reads fs's flags from args. -h prints the command's usage
// on out and returns flag.ErrHelp (exit status 0); a bad flag, or more
// than maxArgs arguments after the flags, is a usage error.
func parseFlags(fs *flag.FlagSet, args []string, out io.Writer, maxArgs int) error {
	err := fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		printCommandUsage(out, fs)
		return flag.ErrHelp
	}
	if err != nil {
		return &usageError{cmd: fs.Name(), err: err}
	}
	if fs.NArg() > maxArgs {
		return usagef(fs.Name(), "unexpected argument %q", fs.Arg(maxArgs))
	}
	return nil
}

// printCommandUsage is a command's -h: synopsis, what it does, its flags.
func printCommandUsage(w io.Writer, fs *flag.FlagSet) {
	d := docOf(fs.Name())
	fmt.Fprintf(w, "usage: %s\n\n%s.\n", strings.TrimSpace("ringactor "+d.name+" "+d.args), strings.ToUpper(d.summary[:1])+d.summary[1:])
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	if n > 0 {
		fmt.Fprint(w, "\nflags:\n")
		fs.SetOutput(w)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
	}
}

// guideRuntime opens a runtime on backend and reads -devices for the main
// job's three stages.
// tel, when not nil, gives it the tracer and meter providers.
func guideRuntime(backend, devices string, errOut io.Writer, tel *otelsetup.Setup) (*ra.Runtime, [3]int, error) {
	if err := checkBackend(backend); err != nil {
		return nil, [3]int{}, err
	}
	cfg := ra.Config{Devices: ra.DeviceOptions{Backend: backend}}
	if tel != nil {
		cfg.TracerProvider, cfg.MeterProvider = tel.TracerProvider, tel.MeterProvider
	}
	rt, err := ra.New(cfg)
	if err != nil {
		return nil, [3]int{}, err
	}
	fmt.Fprintln(errOut, rt.Registry().Note()) // which devices, and why no others (the library prints nothing)
	reg := rt.Registry()
	id := func(name string) (int, error) { d, err := reg.Lookup(name); return d.ID, err }
	ids, err := devlist.Parse(devices, 3, id, reg.Chain, ra.ErrNoDevice)
	if err != nil {
		rt.Close()
		return nil, [3]int{}, usagef("", "-devices: %w", err) // a value this machine's devices do not fit
	}
	return rt, [3]int(ids), nil
}

func describe(ctx context.Context, args []string, out, errOut io.Writer) error {
	fs := newFlags("describe")
	devs := fs.String("devices", "auto", `devices of the three stages: ids or "cpu", one for all, or auto (the fastest links)`)
	backend := fs.String("backend", "auto", "auto, sim or cuda")
	if err := parseFlags(fs, args, out, 0); err != nil {
		return err
	}
	rt, ids, err := guideRuntime(*backend, *devs, errOut, nil)
	if err != nil {
		return err
	}
	defer rt.Close()
	p, err := rt.Build(ctx, demo.Guide("guide", ids))
	if err != nil {
		return err
	}
	fmt.Fprint(out, p.Describe())
	return p.Close(ctx, false)
}
