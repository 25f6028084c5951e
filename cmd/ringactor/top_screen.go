package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"
)

// The escape sequences of top's terminal view (xterm's, which every
// terminal emulator in use understands).
const (
	enterAltScreen = "\x1b[?1049h" // the alternate screen: what it shows leaves no scrollback
	leaveAltScreen = "\x1b[?1049l" // back to the screen as it was
	hideCursor     = "\x1b[?25l"
	showCursor     = "\x1b[?25h"
	cursorHome     = "\x1b[H"
	clearLineEnd   = "\x1b[K"
	clearScreenEnd = "\x1b[J"
)

// withFd runs fn with f's descriptor. Unlike File.Fd it leaves f
// non-blocking, so a read of f still ends at its deadline.
func withFd(f *os.File, fn func(fd int)) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	return rc.Control(func(fd uintptr) { fn(int(fd)) })
}

// isTerminal says whether w is a terminal, and which file it is.
func isTerminal(w any) (*os.File, bool) {
	f, ok := w.(*os.File)
	if !ok || f == nil {
		return nil, false
	}
	tty := false
	if withFd(f, func(fd int) { tty = term.IsTerminal(fd) }) != nil {
		return nil, false
	}
	return f, tty
}

// terminalSize is f's size in characters, or 80x24 where the terminal
// does not say.
func terminalSize(f *os.File) (width, height int) {
	width, height = 80, 24
	withFd(f, func(fd int) {
		if w, h, err := term.GetSize(fd); err == nil && w > 0 && h > 0 {
			width, height = w, h
		}
	})
	return width, height
}

// screen is top's view on a terminal: the alternate screen with the cursor
// hidden, each frame drawn over the last from the top left (nothing goes
// to the scrollback), and, when in is a terminal too, in in raw mode so
// that a key needs no Enter. close puts all of it back, once.
type screen struct {
	out   *os.File
	in    *os.File      // nil: no keys are read
	state *term.State   // in's mode before raw
	keys  chan byte     // the bytes typed; nil without in
	done  chan struct{} // closed when the reader of in has returned
	once  sync.Once
	err   error
}

// openScreen switches out to top's view and starts reading keys from in
// (nil, or not a terminal: none).
func openScreen(out, in *os.File) (*screen, error) {
	s := &screen{out: out}
	if _, tty := isTerminal(in); tty {
		var err error
		withFd(in, func(fd int) { s.state, err = term.MakeRaw(fd) })
		if err != nil {
			return nil, fmt.Errorf("top: putting the terminal in raw mode to read q: %w (run top with stdin from /dev/null to go without keys)", err)
		}
		s.in, s.keys, s.done = in, make(chan byte, 16), make(chan struct{})
		go s.read()
	}
	if _, err := io.WriteString(out, enterAltScreen+hideCursor+cursorHome+clearScreenEnd); err != nil {
		return nil, errors.Join(err, s.close())
	}
	return s, nil
}

// read hands the bytes typed to s.keys until in fails or close sets a
// deadline on it.
func (s *screen) read() {
	defer close(s.done)
	buf := make([]byte, 64)
	for {
		n, err := s.in.Read(buf)
		for _, b := range buf[:n] {
			select {
			case s.keys <- b:
			default: // typed faster than frames: drop
			}
		}
		if err != nil {
			return
		}
	}
}

// hint is the frame's last line: how to leave.
func (s *screen) hint() string {
	if s.keys != nil {
		return "q to quit"
	}
	return "Ctrl-C to stop"
}

// draw shows lines from the top left, each clearing what the last frame
// left to its right, and clears the rest of the screen: no full clear,
// so nothing flickers and nothing scrolls. Lines beyond the screen's
// height are left out but the last (the hint).
func (s *screen) draw(lines []string, height int) error {
	if height := max(height, 1); len(lines) > height {
		lines = append(lines[:height-1:height-1], lines[len(lines)-1])
	}
	var b strings.Builder
	b.WriteString(cursorHome)
	for i, l := range lines {
		if i > 0 {
			b.WriteString("\r\n") // raw mode: a newline does not return the carriage
		}
		b.WriteString(l)
		b.WriteString(clearLineEnd)
	}
	b.WriteString(clearScreenEnd)
	_, err := io.WriteString(s.out, b.String())
	return err
}

// close shows the cursor, leaves the alternate screen, stops reading keys
// and restores in's mode; the first call does, later ones return its
// error.
func (s *screen) close() error {
	s.once.Do(func() {
		_, err := io.WriteString(s.out, showCursor+leaveAltScreen)
		if s.in != nil {
			// A terminal opened by the program (a test's pty) takes
			// a deadline, which ends the read; the process's stdin
			// may not, and its reader ends with the process.
			if s.in.SetReadDeadline(time.Now()) == nil {
				<-s.done
				s.in.SetReadDeadline(time.Time{})
			}
			withFd(s.in, func(fd int) {
				if rerr := term.Restore(fd, s.state); rerr != nil {
					err = errors.Join(err, fmt.Errorf("top: restoring the terminal's mode: %w (run `stty sane` to reset it)", rerr))
				}
			})
		}
		s.err = err
	})
	return s.err
}

// raiseInterrupt sends the process the interrupt that Ctrl-C would have
// sent had the terminal not been in raw mode, so that top ends as on
// Ctrl-C (main's signal handling decides the rest). It reports false
// where the interrupt is ignored or cannot be sent.
func raiseInterrupt() bool {
	if signal.Ignored(os.Interrupt) {
		return false
	}
	p, err := os.FindProcess(os.Getpid())
	return err == nil && p.Signal(os.Interrupt) == nil
}
