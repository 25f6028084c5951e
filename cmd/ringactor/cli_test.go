package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	ra "github.com/ringactor/ringactor/runtime"
	"github.com/ringactor/ringactor/version"
)

// runInProcess runs the command line as main does, short of exiting: its
// exit status and what it printed.
func runInProcess(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	ctx := context.Background()
	err := run(ctx, args, &out, &errOut)
	code = exitCode(ctx, err)
	if code != exitOK && err != nil {
		fmt.Fprintln(&errOut, errorLine(commandOf(args), err, code))
	}
	return code, out.String(), errOut.String()
}

// ringactor starts this test binary as the command (TestMain runs main
// under runMainEnv).
func ringactor(args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), runMainEnv+"=1", "RINGACTOR_SIM_DEVICES=2")
	return cmd
}

// runBinary runs the command line as a process: its exit status and what
// it printed.
func runBinary(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := ringactor(args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	return cmd.ProcessState.ExitCode(), out.String(), errOut.String()
}

// The exit statuses, from the process: 0 for success, help and version,
// 2 for a wrong command line, 1 for a failure while running.
func TestExitStatusOfTheBinary(t *testing.T) {
	for _, c := range []struct {
		args   []string
		code   int
		stdout string // what stdout begins with
		stderr string // what stderr has ("" for nothing at all)
	}{
		{[]string{"-h"}, 0, "usage: ringactor <command>", ""},
		{[]string{"devices", "-h"}, 0, "usage: ringactor devices", ""},
		{[]string{"help", "bench"}, 0, "usage: ringactor bench", ""},
		{[]string{"version"}, 0, "ringactor " + version.Version, ""},
		{[]string{"--version"}, 0, "ringactor " + version.Version, ""},
		{[]string{"nope"}, 2, "", `ringactor: unknown command "nope"`},
		{[]string{"devices", "foo"}, 2, "", "ringactor: devices: unexpected argument \"foo\"\nRun 'ringactor help devices' for usage.\n"},
		{[]string{"describe", "-nope"}, 2, "", "ringactor: describe: flag provided but not defined: -nope\n"},
		{[]string{"bench", "-cpuprofile", filepath.Join(t.TempDir(), "no", "such", "dir")}, 1, "", "ringactor: bench: -cpuprofile: open "},
	} {
		code, stdout, stderr := runBinary(t, c.args...)
		if code != c.code || !strings.HasPrefix(stdout, c.stdout) || (c.stderr == "") != (stderr == "") || !strings.Contains(stderr, c.stderr) {
			t.Errorf("ringactor %s: exit status %d, stdout %q, stderr %q; want %d, stdout beginning %q, stderr with %q",
				strings.Join(c.args, " "), code, stdout, stderr, c.code, c.stdout, c.stderr)
		}
	}
}

// Every command's -h (and -help, --help) prints its usage on stdout,
// nothing on stderr, and succeeds; `help <command>` prints the same.
func TestHelpOfEveryCommand(t *testing.T) {
	for _, c := range commands {
		for _, h := range []string{"-h", "-help", "--help"} {
			code, stdout, stderr := runInProcess(t, c.name, h)
			if code != 0 || stderr != "" || !strings.Contains(stdout, "ringactor "+c.name) {
				t.Errorf("%s %s: exit status %d, stdout %q, stderr %q", c.name, h, code, stdout, stderr)
			}
		}
		_, want, _ := runInProcess(t, c.name, "-h")
		code, got, stderr := runInProcess(t, "help", c.name)
		if code != 0 || stderr != "" || got != want {
			t.Errorf("help %s: exit status %d, stderr %q, stdout:\n%s\nwant %s -h's:\n%s", c.name, code, stderr, got, c.name, want)
		}
	}
	_, stdout, _ := runInProcess(t, "devices", "-h")
	for _, want := range []string{"usage: ringactor devices [-json] [-backend auto|sim|cuda]\n", "\nflags:\n", "  -backend string", "  -json"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("devices -h lacks %q:\n%s", want, stdout)
		}
	}
	_, stdout, _ = runInProcess(t, "help")
	for _, c := range commands {
		if !strings.Contains(stdout, "\n  "+c.name+" ") {
			t.Errorf("help does not list %s:\n%s", c.name, stdout)
		}
	}
}

// Wrong command lines are usage errors (exit status 2) that name the
// command once and the help to read.
func TestUsageErrors(t *testing.T) {
	t.Setenv("RINGACTOR_SIM_DEVICES", "4")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"help", "nope"}, "ringactor: help: unknown help topic \"nope\"; the topics are devices, describe, bench, bench-gpu, top, version, help\nRun 'ringactor help' for usage.\n"},
		{[]string{"help", "devices", "describe"}, `ringactor: help: unexpected argument "describe"`},
		{[]string{"describe", "x"}, "ringactor: describe: unexpected argument \"x\"\nRun 'ringactor help describe' for usage.\n"},
		{[]string{"bench", "extra"}, `ringactor: bench: unexpected argument "extra"`},
		{[]string{"bench-gpu", "extra"}, `ringactor: bench-gpu: unexpected argument "extra"`},
		{[]string{"version", "extra"}, `ringactor: version: unexpected argument "extra"`},
		{[]string{"bench", "-scale", "0"}, "ringactor: bench: -scale 0: want a number above 0"},
		{[]string{"bench", "-quick=maybe"}, `ringactor: bench: invalid boolean value "maybe" for -quick`},
		{[]string{"devices", "-backend", "opencl"}, `ringactor: devices: -backend "opencl": choose auto, `},
		{[]string{"describe", "-backend", "sim", "-devices", "0,7"}, "ringactor: describe: -devices: no such device 7: GPUs are 0..3"},
		{[]string{"top", "-nope"}, "ringactor: top: flag provided but not defined: -nope\nRun 'ringactor help top' for usage.\n"},
		{[]string{"-x"}, "ringactor: flag provided but not defined: -x"},
		{[]string{"nope"}, "ringactor: unknown command \"nope\"; the commands are devices, describe,"},
		{[]string{}, "ringactor: no command given\nRun 'ringactor help' for usage.\n"},
	} {
		code, _, stderr := runInProcess(t, c.args...)
		once := true // no line says "ringactor: " twice
		for _, l := range strings.Split(stderr, "\n") {
			once = once && strings.Count(l, "ringactor: ") <= 1
		}
		if code != exitUsage || !strings.Contains(stderr, c.want) || !once {
			t.Errorf("%q: exit status %d, stderr %q; want 2 and %q, with one \"ringactor: \" a line", c.args, code, stderr, c.want)
		}
	}
}

// The exit status is decided in one place: 0, 1, 2, or 128 + the signal
// that interrupted the command, whatever it returned then.
func TestExitCode(t *testing.T) {
	bg := context.Background()
	signaled := func(s os.Signal) context.Context {
		ctx, cancel := context.WithCancelCause(bg)
		cancel(interrupted{s})
		return ctx
	}
	canceled, cancel := context.WithCancel(bg)
	cancel()
	for _, c := range []struct {
		ctx  context.Context
		err  error
		want int
	}{
		{bg, nil, 0},
		{bg, flag.ErrHelp, 0},
		{bg, fmt.Errorf("help: %w", flag.ErrHelp), 0},
		{bg, errors.New("boom"), 1},
		{bg, usagef("devices", "unexpected argument %q", "x"), 2},
		{bg, fmt.Errorf("-devices: %w", usagef("", "bad")), 2},
		{canceled, context.Canceled, 1}, // canceled by no signal
		{signaled(os.Interrupt), context.Canceled, 130},
		{signaled(os.Interrupt), nil, 130},
		{signaled(os.Interrupt), usagef("", "bad"), 130},
		{signaled(syscall.SIGTERM), errors.New("stopped"), 143},
	} {
		if got := exitCode(c.ctx, c.err); got != c.want {
			t.Errorf("exitCode(%v, %v) = %d, want %d", context.Cause(c.ctx), c.err, got, c.want)
		}
	}
	if got := errorLine("bench", context.Canceled, 130); got != "ringactor: bench: interrupted" {
		t.Errorf("interrupted bench's error line %q", got)
	}
}

// An error names the command once: the packages' own "ringactor: " and a
// part said twice ("cuda: cuda: ") are dropped wherever wrapping put them.
func TestErrorLineOnePrefix(t *testing.T) {
	driver := errors.New("cuda: driver not found (tried libcuda.so.1)")
	for _, c := range []struct {
		cmd  string
		err  error
		want string
	}{
		{"devices", fmt.Errorf("ringactor: backend unavailable: cuda: %w; choose sim", driver),
			"ringactor: devices: backend unavailable: cuda: driver not found (tried libcuda.so.1); choose sim"},
		{"describe", fmt.Errorf("-devices: %w", fmt.Errorf("%w 7: GPUs are 0..3", ra.ErrNoDevice)),
			"ringactor: describe: -devices: no such device 7: GPUs are 0..3"},
		{"bench", errors.New("bench: -scale 0: want more"), "ringactor: bench: -scale 0: want more"},
		{"bench", fmt.Errorf("ringactor: bench: link/x: %w", errors.New("ringactor: ringactor: gone")), "ringactor: bench: link/x: gone"},
		{"", errors.New("ringactor: no command"), "ringactor: no command"},
		{"top", errors.New("a: b: b"), "ringactor: top: a: b: b"}, // the last part is the message, kept
	} {
		if got := errorLine(c.cmd, c.err, exitError); got != c.want {
			t.Errorf("errorLine(%q, %q) = %q, want %q", c.cmd, c.err, got, c.want)
		}
	}
}

// Ctrl-C ends bench with exit status 130 and says it was interrupted.
func TestInterruptedBenchExits130(t *testing.T) {
	cmd := ringactor("bench", "-only", "link/64B-single", "-backend", "sim")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stderr)
	var seen []string
	for sc.Scan() {
		seen = append(seen, sc.Text())
		if strings.HasPrefix(sc.Text(), "bench: [1/") {
			break
		}
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	rest, _ := io.ReadAll(stderr)
	cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != 130 || !strings.HasSuffix(string(rest), "ringactor: bench: interrupted\n") {
		t.Fatalf("bench after Ctrl-C: exit status %d; stderr:\n%s\n%s", code, strings.Join(seen, "\n"), rest)
	}
}

// affinityOf reads a GPU's affinity from its PCI device in sysfs, the
// CPU's from the online CPUs and nodes; a device without a PCI address
// has none.
func TestAffinityFromSysfs(t *testing.T) {
	root := t.TempDir()
	write := func(name, content string) {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("bus/pci/devices/0000:17:00.0/local_cpulist", "0-27,56-83\n")
	write("bus/pci/devices/0000:17:00.0/numa_node", "0\n")
	write("bus/pci/devices/0000:b1:00.0/local_cpulist", "0-111\n")
	write("bus/pci/devices/0000:b1:00.0/numa_node", "-1\n")
	write("devices/system/cpu/online", "0-111\n")
	write("devices/system/node/online", "0-1\n")
	for _, c := range []struct {
		dev  ra.Device
		want affinity
	}{
		{ra.Device{Kind: ra.KindGPU, PCIBusID: "0000:17:00.0"}, affinity{"0-27,56-83", "0"}},
		{ra.Device{Kind: ra.KindGPU, PCIBusID: "0000:B1:00.0"}, affinity{"0-111", ""}}, // numa_node -1: not known
		{ra.Device{Kind: ra.KindGPU, PCIBusID: "0000:99:00.0"}, affinity{}},            // not in sysfs
		{ra.Device{Kind: ra.KindGPU}, affinity{}},                                      // simulated
		{ra.Device{Kind: ra.KindCPU}, affinity{"0-111", "0-1"}},
	} {
		if got := affinityOf(root, c.dev); got != c.want {
			t.Errorf("affinityOf(%+v) = %+v, want %+v", c.dev, got, c.want)
		}
	}
}
