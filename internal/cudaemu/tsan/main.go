// Command tsan runs the device loop (ra_ring_loop in
// kernels/cuda/ringactor.cuh) under ThreadSanitizer: make tsan, part of make
// test.
//
// It writes a harness (csrc/harness.cpp, embedded here: Go refuses C++ files
// beside the Go files of a package without cgo), the ring kernels of a
// few built-in ops (kernels.RingSource, the text NVRTC compiles), the
// headers of kernels.Headers() and the host shim (internal/cudaemu's
// csrc/ra_host.h) into DIR/src, and compiles them with -fsanitize=thread
// into DIR/harness, unless that binary was built from the same sources and
// flags (a hash stamp, as cudaemu.Build does). Then it runs every case of the
// harness at each thread count (-n, threads per block: the kernel runs as
// that many real threads with a real barrier), with
// TSAN_OPTIONS=halt_on_error=1 exitcode=66, and prints one line per run. Any
// ThreadSanitizer report or failed check prints the run's output and makes
// the command exit 1.
//
// -headers DIR replaces the headers of the same name (ringactor.cuh,
// ringactor_layout.h, ringactor_types.h) with DIR's: the way to run the
// harness over a modified device loop, e.g. to see that it catches a
// memory-order defect put back on purpose.
package main

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/ringactor/ringactor/internal/cudaemu"
	"github.com/ringactor/ringactor/kernels"
)

//go:embed csrc/harness.cpp
var harness string

// ops are the ops the harness's cases run (its table tsan_ops).
var ops = []string{"scale", "branch", "keyed_scale", "keyed_count"}

// tsanOptions: stop at the first report and exit with a code of its own.
const tsanOptions = "halt_on_error=1 exitcode=66 second_deadlock_stack=1"

// exitTSan is the exit code tsanOptions gives a run with a report.
const exitTSan = 66

func main() {
	dir := flag.String("dir", ".tsan", "directory for the sources and the harness binary (a cache)")
	headers := flag.String("headers", "", "directory whose files replace kernels.Headers() of the same name (ringactor.cuh, ...)")
	threads := flag.String("n", "1,4,32", "threads per block, comma-separated")
	only := flag.String("run", "", "run only the cases whose name matches this regexp")
	jobs := flag.Int("j", runtime.NumCPU(), "runs at once")
	timeout := flag.Duration("timeout", 2*time.Minute, "limit of one run")
	flag.Parse()
	if err := run(*dir, *headers, *threads, *only, *jobs, *timeout); err != nil {
		fmt.Fprintln(os.Stderr, "tsan:", err)
		os.Exit(1)
	}
}

func run(dir, headers, threads, only string, jobs int, timeout time.Duration) error {
	ns, err := parseThreads(threads)
	if err != nil {
		return err
	}
	var match *regexp.Regexp
	if only != "" {
		if match, err = regexp.Compile(only); err != nil {
			return fmt.Errorf("-run: %w", err)
		}
	}
	start := time.Now()
	bin, err := build(dir, headers)
	if err != nil {
		return err
	}
	cases, err := list(bin)
	if err != nil {
		return err
	}
	var runs []caseRun
	for _, c := range cases {
		if match != nil && !match.MatchString(c.name) {
			continue
		}
		for _, n := range ns {
			runs = append(runs, caseRun{c: c, n: n})
		}
	}
	if len(runs) == 0 {
		return fmt.Errorf("no case matches -run %q", only)
	}
	maxN := 0
	for _, n := range ns {
		maxN = max(maxN, n)
	}
	env := append(os.Environ(),
		"TSAN_OPTIONS="+strings.TrimSpace(tsanOptions+" "+os.Getenv("TSAN_OPTIONS")), // the caller's options come last and win
		"RINGACTOR_EMU_THREADS="+strconv.Itoa(maxN))

	// Run jobs at once; print in order, each as soon as it and those before it are done.
	jobs = max(jobs, 1)
	done := make([]chan struct{}, len(runs))
	sem := make(chan struct{}, jobs)
	for i := range runs {
		done[i] = make(chan struct{})
		go func(r *caseRun, d chan struct{}) {
			sem <- struct{}{}
			r.exec(bin, env, timeout)
			<-sem
			close(d)
		}(&runs[i], done[i])
	}
	failed := 0
	for i := range runs {
		<-done[i]
		r := &runs[i]
		fmt.Printf("tsan: %-12s %-12s N=%-3d %-5s %6.2fs  %s\n", r.c.name, r.c.op, r.n, r.result, r.wall.Seconds(), r.detail)
		if r.result != "ok" {
			failed++
			fmt.Printf("---- %s at N=%d: %s\n%s\n---- end of %s at N=%d\n", r.c.name, r.n, r.why, clip(r.out, 120), r.c.name, r.n)
		}
	}
	fmt.Printf("tsan: %d runs (%d cases x N=%s), %d failed, %.1fs\n", len(runs), len(runs)/len(ns), threads, failed, time.Since(start).Seconds())
	if failed > 0 {
		return fmt.Errorf("%d of %d runs failed", failed, len(runs))
	}
	return nil
}

func parseThreads(s string) ([]int, error) {
	var ns []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > 1024 {
			return nil, fmt.Errorf("-n: %q: want thread counts from 1 to 1024, comma-separated", s)
		}
		ns = append(ns, n)
	}
	return ns, nil
}

type tcase struct{ name, op, what string }

// list asks the harness for its cases.
func list(bin string) ([]tcase, error) {
	out, err := exec.Command(bin, "-list").Output()
	if err != nil {
		return nil, fmt.Errorf("%s -list: %w", bin, err)
	}
	var cs []tcase
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.SplitN(line, "\t", 3)
		if len(f) != 3 {
			return nil, fmt.Errorf("%s -list: bad line %q", bin, line)
		}
		cs = append(cs, tcase{f[0], f[1], f[2]})
	}
	return cs, nil
}

type caseRun struct {
	c      tcase
	n      int
	result string // ok, TSAN, FAIL, HUNG
	why    string
	detail string
	out    string
	wall   time.Duration
}

func (r *caseRun) exec(bin string, env []string, timeout time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, r.c.name, strconv.Itoa(r.n))
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	t := time.Now()
	err := cmd.Run()
	r.wall = time.Since(t)
	r.out = stderr.String() + stdout.String()
	line := strings.TrimSpace(stdout.String())
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		r.result, r.why = "HUNG", fmt.Sprintf("killed after %v", timeout)
	case err == nil && strings.HasPrefix(line, "ok ") && !strings.Contains(r.out, "ThreadSanitizer"):
		r.result, r.detail = "ok", strings.TrimPrefix(line, "ok ")
	case errors.As(err, &ee) && ee.ExitCode() == exitTSan:
		r.result, r.why = "TSAN", "ThreadSanitizer report"
	case strings.Contains(r.out, "ThreadSanitizer"):
		r.result, r.why = "TSAN", fmt.Sprintf("ThreadSanitizer output (%v)", err)
		if strings.Contains(r.out, "unexpected memory mapping") {
			r.why += "; this kernel's address randomization is too wide for this libtsan: run with setarch -R, or lower vm.mmap_rnd_bits to 28"
		}
	case errors.As(err, &ee) && ee.ExitCode() == 3:
		r.result, r.why = "HUNG", "the loop did not end"
	default:
		r.result, r.why = "FAIL", fmt.Sprintf("failed checks (%v)", err)
	}
	if r.result != "ok" {
		r.detail = r.why
	}
}

// clip keeps the first n lines of s.
func clip(s string, n int) string {
	lines := strings.SplitAfter(s, "\n")
	if len(lines) <= n {
		return strings.TrimRight(s, "\n")
	}
	return strings.Join(lines[:n], "") + fmt.Sprintf("... (%d more lines)", len(lines)-n)
}

// opsSource is the generated translation unit: each op's ring-kernel
// program, a launch wrapper for it, and the table the harness looks ops up in.
func opsSource() (string, error) {
	var b, table strings.Builder
	b.WriteString("// Code generated by internal/cudaemu/tsan; DO NOT EDIT.\n")
	b.WriteString("// The ring kernels the ThreadSanitizer harness runs, as NVRTC compiles them, built for the host.\n")
	for _, name := range ops {
		op, err := kernels.Lookup(name)
		if err != nil {
			return "", err
		}
		if op.CUDA == "" {
			return "", fmt.Errorf("op %q has no CUDA source", name)
		}
		sym := kernels.Symbol(name)
		fmt.Fprintf(&b, "\n// ---- op %q\n%s\n", name, kernels.RingSource(op).Code)
		fmt.Fprintf(&b, "static void run_%s_ring(void **p) { ra_ring_args a; memcpy(&a, p[0], sizeof a); %s_ring(a); }\n", sym, sym)
		fmt.Fprintf(&table, "    {%q, run_%s_ring},\n", name, sym)
	}
	b.WriteString("\nstruct tsan_op {\n    const char *name;\n    void (*fn)(void **);\n};\n")
	b.WriteString("extern \"C\" const tsan_op tsan_ops[] = {\n")
	b.WriteString(table.String())
	b.WriteString("    {0, 0},\n};\n")
	return b.String(), nil
}

// build writes the sources and compiles the harness, unless the binary
// there was built from the same sources and flags.
func build(dir, headers string) (string, error) {
	cxx, err := cudaemu.Compiler()
	if err != nil {
		return "", err
	}
	gen, err := opsSource()
	if err != nil {
		return "", err
	}
	files := map[string]string{"harness.cpp": harness, "ops.cpp": gen, "ra_host.h": cudaemu.HostShim()}
	for name, text := range kernels.Headers() {
		files[name] = text
	}
	if headers != "" {
		replaced := 0
		for name := range kernels.Headers() {
			b, err := os.ReadFile(filepath.Join(headers, name))
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			if err != nil {
				return "", fmt.Errorf("-headers: %w", err)
			}
			files[name] = string(b)
			replaced++
			fmt.Printf("tsan: %s from %s\n", name, headers)
		}
		if replaced == 0 {
			return "", fmt.Errorf("-headers %s: none of %s there", headers, strings.Join(headerNames(), ", "))
		}
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	src := filepath.Join(abs, "src")
	bin := filepath.Join(abs, "harness")
	args := []string{"-std=c++17", "-O1", "-g", "-fsanitize=thread", "-pthread",
		"-Wall", "-Wno-unused-function", "-Wno-unused-variable",
		"-Wno-tsan", // GCC's TSan does not model fences; the host seam uses release stores instead (ringactor.cuh)
		"-I", src, "-include", filepath.Join(src, "ra_host.h"), "-o", bin,
		filepath.Join(src, "harness.cpp"), filepath.Join(src, "ops.cpp")}
	stamp := cudaemu.Stamp(cxx, args, files)
	if old, err := os.ReadFile(bin + ".stamp"); err == nil && string(old) == stamp {
		if _, err := os.Stat(bin); err == nil {
			return bin, nil
		}
	}
	if err := os.MkdirAll(src, 0o755); err != nil {
		return "", err
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(src, name), []byte(text), 0o644); err != nil {
			return "", err
		}
	}
	os.Remove(bin + ".stamp")
	fmt.Printf("tsan: compiling the harness with %s -fsanitize=thread into %s\n", filepath.Base(cxx), bin)
	t := time.Now()
	var out bytes.Buffer
	cmd := exec.Command(cxx, args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		if perr := probe(cxx, abs); perr != nil {
			return "", perr
		}
		return "", fmt.Errorf("%s failed: %w\n%s", filepath.Base(cxx), err, out.String())
	}
	if out.Len() > 0 {
		fmt.Print(out.String())
	}
	fmt.Printf("tsan: compiled in %.1fs\n", time.Since(t).Seconds())
	if err := os.WriteFile(bin+".stamp", []byte(stamp), 0o644); err != nil {
		return "", err
	}
	return bin, nil
}

// probe tells a compiler that cannot build a ThreadSanitizer program at all
// (the usual cause: its TSan runtime is not installed) from a harness that
// does not compile.
func probe(cxx, dir string) error {
	p := filepath.Join(dir, "probe.cpp")
	if err := os.WriteFile(p, []byte("int main() { return 0; }\n"), 0o644); err != nil {
		return err
	}
	out, err := exec.Command(cxx, "-fsanitize=thread", "-pthread", "-o", filepath.Join(dir, "probe"), p).CombinedOutput()
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s cannot build a ThreadSanitizer program (-fsanitize=thread), so make tsan cannot run: %v\n%s\n"+
		"The TSan runtime is missing: on Debian 12 it is libtsan2, which g++ (gcc 12) pulls in: apt-get install g++; "+
		"with clang, install its compiler-rt; or point $CXX at a compiler that has it",
		filepath.Base(cxx), err, strings.TrimSpace(string(out)))
}

func headerNames() []string {
	var ns []string
	for n := range kernels.Headers() {
		ns = append(ns, n)
	}
	sort.Strings(ns)
	return ns
}
