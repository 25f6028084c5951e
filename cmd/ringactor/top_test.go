package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
)

// ptyLog is what a program wrote to a pseudo-terminal, read off its
// master as it comes.
type ptyLog struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	changed chan struct{} // closed and replaced on every read
	done    chan struct{} // closed when the master's reads end
}

// readOutput reads master (a pseudo-terminal's, or any file) until it fails.
func readOutput(master *os.File) *ptyLog {
	l := &ptyLog{changed: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(l.done)
		b := make([]byte, 4096)
		for {
			n, err := master.Read(b)
			l.mu.Lock()
			l.buf.Write(b[:n])
			close(l.changed)
			l.changed = make(chan struct{})
			l.mu.Unlock()
			if err != nil { // EIO once the terminal's side is closed
				return
			}
		}
	}()
	return l
}

func (l *ptyLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// waitFor waits until the output matches re, or ctx ends.
func (l *ptyLog) waitFor(ctx context.Context, re *regexp.Regexp) error {
	for {
		l.mu.Lock()
		ok, changed := re.Match(l.buf.Bytes()), l.changed
		l.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("no %s in the terminal's output: %w\n%q", re, ctx.Err(), l.String())
		}
	}
}

// termios is tty's terminal mode, read without File.Fd (which would make
// the file blocking and its reads deaf to deadlines).
func termios(t *testing.T, tty *os.File) unix.Termios {
	t.Helper()
	var tio *unix.Termios
	var err error
	if cerr := withFd(tty, func(fd int) { tio, err = unix.IoctlGetTermios(fd, unix.TCGETS) }); cerr != nil || err != nil {
		t.Fatal(cerr, err)
	}
	return *tio
}

// ptyRun is one run of top in a pseudo-terminal of cols x rows, ended by
// typing key once the first frame is on the screen.
type ptyRun struct {
	out            string // everything top wrote to the terminal
	err            error  // top's
	before, during unix.Termios
	after          unix.Termios
	interrupts     int // calls of topIO.interrupt
}

func runTopInPty(t *testing.T, cols, rows uint16, key string) ptyRun {
	t.Helper()
	master, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal here: %v", err)
	}
	defer master.Close()
	if err := pty.Setsize(master, &pty.Winsize{Cols: cols, Rows: rows}); err != nil {
		t.Fatal(err)
	}
	log := readOutput(master)
	defer func() {
		tty.Close() // the master's read ends with EIO
		<-log.done
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // bounds a hang, not the run
	defer cancel()
	var r ptyRun
	r.before = termios(t, tty)

	// main's ctx, which its interrupt handler ends; interrupt stands in
	// for the signal (this test's process has no handler for one).
	mainCtx, interrupted := context.WithCancel(ctx)
	defer interrupted()
	var errOut bytes.Buffer
	returned := make(chan error, 1)
	go func() {
		returned <- runTop(mainCtx, []string{"-backend", "sim", "-devices", "1", "-interval", "50ms"},
			topIO{in: tty, out: tty, errOut: &errOut, interrupt: func() bool { r.interrupts++; interrupted(); return true }})
	}()
	if err := log.waitFor(ctx, regexp.MustCompile(`busy`)); err != nil {
		t.Fatal(err)
	}
	r.during = termios(t, tty)
	if _, err := master.Write([]byte(key)); err != nil {
		t.Fatal(err)
	}
	select {
	case r.err = <-returned:
	case <-ctx.Done():
		t.Fatalf("top did not end on %q: %v\n%q", key, ctx.Err(), log.String())
	}
	// top has returned: all it wrote is on its way to the master.
	if err := log.waitFor(ctx, regexp.MustCompile(`in flight \d+`)); err != nil {
		t.Fatal(err, errOut.String())
	}
	r.after = termios(t, tty)
	r.out = log.String()
	return r
}

// checkTerminalRun asserts what every run of top on a terminal must do:
// the alternate screen before the first frame, no full clear (which
// would push the shell's screen into the scrollback), the cursor shown
// and the screen left once at the end, the terminal's mode raw while it
// ran (q needs no Enter) and as before once it returned.
func checkTerminalRun(t *testing.T, r ptyRun) {
	t.Helper()
	if r.err != nil {
		t.Fatalf("top returned %v", r.err)
	}
	enter, frame := strings.Index(r.out, enterAltScreen), strings.Index(r.out, "ringactor top:")
	if enter < 0 || frame < enter {
		t.Fatalf("the first frame (at %d) is not on the alternate screen (entered at %d):\n%q", frame, enter, r.out)
	}
	if strings.Contains(r.out, "\x1b[2J") {
		t.Errorf("top clears the whole screen (\\x1b[2J), which scrolls the terminal's history:\n%q", r.out)
	}
	leave := strings.LastIndex(r.out, showCursor+leaveAltScreen)
	if n := strings.Count(r.out, leaveAltScreen); n != 1 || leave < strings.LastIndex(r.out, "ringactor top:") {
		t.Fatalf("the alternate screen is left %d times, at %d, not once after the last frame:\n%q", n, leave, r.out)
	}
	if !strings.Contains(r.out[max(leave, 0):], "dead-lettered 0, in flight 0") {
		t.Errorf("the demo's account is not below the restored screen:\n%q", r.out)
	}
	if r.during.Lflag&(unix.ECHO|unix.ICANON) != 0 {
		t.Errorf("the terminal was not in raw mode while top ran: lflag %#x", r.during.Lflag)
	}
	if r.after != r.before {
		t.Errorf("the terminal's mode is not restored:\nbefore %+v\nafter  %+v", r.before, r.after)
	}
}

// The check: top in a terminal quits on q and leaves the screen
// as it was.
func TestTopTerminalQuitsOnQ(t *testing.T) {
	r := runTopInPty(t, 120, 40, "q")
	checkTerminalRun(t, r)
	if r.interrupts != 0 {
		t.Errorf("q raised an interrupt")
	}
}

// Ctrl-C arrives as a byte in raw mode: top raises the interrupt that the
// terminal would have sent (main's handler ends the ctx), and ends as on
// an interrupt.
func TestTopTerminalCtrlC(t *testing.T) {
	r := runTopInPty(t, 120, 40, "\x03")
	checkTerminalRun(t, r)
	if r.interrupts != 1 {
		t.Errorf("Ctrl-C raised %d interrupts, want 1", r.interrupts)
	}
}

// csi matches the escape sequences top writes to a terminal.
var csi = regexp.MustCompile(`\x1b\[[0-9;?]*[A-Za-z]`)

// On a terminal 40 columns wide, every frame's line fits (columns are left
// out, the useful ones kept) and a frame fits the screen's height. Whether
// the device table's total still fits depends on the widths of the
// readings (4.6% or 12.3%), so it may be there or not.
func TestTopTerminalWidth(t *testing.T) {
	const cols, rows = 40, 20
	r := runTopInPty(t, cols, rows, "q")
	checkTerminalRun(t, r)
	screen := r.out[strings.Index(r.out, enterAltScreen):strings.LastIndex(r.out, leaveAltScreen)]
	for _, frame := range strings.Split(screen, cursorHome)[1:] {
		lines := strings.Split(csi.ReplaceAllString(frame, ""), "\r\n")
		if len(lines) > rows {
			t.Errorf("a frame of %d lines on a screen of %d:\n%s", len(lines), rows, strings.Join(lines, "\n"))
		}
		for _, l := range lines {
			if n := utf8.RuneCountInString(l); n > cols {
				t.Errorf("a line of %d columns on a screen of %d: %q", n, cols, l)
			}
		}
	}
	for _, head := range []*regexp.Regexp{regexp.MustCompile(`(?m)^\s+device\s+name\s+util\s+used(\s+total)?$`), regexp.MustCompile(`(?m)^\s+stage\s+device\s+msg/s\s+queued\s+busy$`)} {
		if !head.MatchString(strings.ReplaceAll(csi.ReplaceAllString(screen, ""), "\r\n", "\n")) {
			t.Errorf("no %s on the narrow screen:\n%s", head, csi.ReplaceAllString(screen, ""))
		}
	}
}

// To a pipe, top prints plain frames, each under its header line with the
// time and a blank line apart, $COLUMNS wide, and not one escape code.
func TestTopPipeIsPlain(t *testing.T) {
	t.Setenv("COLUMNS", "50")
	rd, wr, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	piped := readOutput(rd) // read as it comes, like a terminal's output
	// wait bounds a hang, not the run.
	wait, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ctx, stop := context.WithCancel(wait) // the interrupt, once two frames are out
	returned := make(chan error, 1)
	var errOut bytes.Buffer
	go func() {
		returned <- runTop(ctx, []string{"-backend", "sim", "-devices", "1", "-interval", "50ms"}, topIO{out: wr, errOut: &errOut})
	}()
	if err := piped.waitFor(wait, regexp.MustCompile(`(?s)ringactor top:.*ringactor top:.*busy`)); err != nil {
		t.Fatal(err)
	}
	stop()
	err = <-returned
	wr.Close()
	<-piped.done
	out := piped.String()
	if err != nil {
		t.Fatal(err, errOut.String())
	}
	if i := strings.IndexByte(out, 0x1b); i >= 0 {
		t.Fatalf("an escape code at %d of top's output to a pipe:\n%q", i, out)
	}
	frames := regexp.MustCompile(`(?m)^ringactor top: sim backend, \d\d:\d\d:\d\d, over \S+$`).FindAllStringIndex(out, -1)
	if len(frames) < 2 {
		t.Fatalf("%d frame headers:\n%s", len(frames), out)
	}
	for _, f := range frames[1:] {
		if !strings.HasSuffix(out[:f[0]], "\n\n") {
			t.Errorf("frames are not a blank line apart:\n%s", out)
		}
	}
	for _, l := range strings.Split(out, "\n") {
		if n := utf8.RuneCountInString(l); n > 50 && !strings.HasPrefix(l, "demo: sent") {
			t.Errorf("a line of %d columns with COLUMNS=50: %q", n, l)
		}
	}
	if !strings.Contains(out, "dead-lettered 0, in flight 0") {
		t.Errorf("no account of the demo:\n%s", out)
	}
}

// servePprof serves the profiles' index on the listener given, and none
// once stopped.
// top -pprof says where the profiles are, and stops serving them when it
// returns.
func TestTopPprofFlag(t *testing.T) {
	var out, errOut bytes.Buffer
	if err := runTop(context.Background(), []string{"-backend", "sim", "-devices", "1", "-once", "-interval", "50ms", "-pprof", "127.0.0.1:0"}, topIO{out: &out, errOut: &errOut}); err != nil {
		t.Fatal(err, errOut.String())
	}
	m := regexp.MustCompile(`profiles at (http://127\.0\.0\.1:\d+/debug/pprof/)`).FindStringSubmatch(errOut.String())
	if m == nil {
		t.Fatalf("top -pprof does not say where:\n%s", errOut.String())
	}
	if _, err := get(t, m[1]); err == nil {
		t.Fatalf("%s still answers after top returned", m[1])
	}
	if err := runTop(context.Background(), []string{"-pprof", "127.0.0.1:-1"}, topIO{out: &out, errOut: &errOut}); err == nil || !strings.Contains(err.Error(), "-pprof") {
		t.Fatalf("a bad -pprof address: %v", err)
	}
}

func get(t *testing.T, url string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := (&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}).Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return string(b), fmt.Errorf("%s", resp.Status)
	}
	return string(b), err
}
