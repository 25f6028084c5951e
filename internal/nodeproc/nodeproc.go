// Package nodeproc runs a ringactor cluster node in a second process: the
// same executable started again with its configuration in an environment
// variable. The example's -remote flag, `ringactor bench` and the
// two-process tests use it. protoactor remote keeps process-wide state, so
// two nodes are two processes, never two runtimes in one.
//
// A program that may be started as a node calls Main first thing in main
// (or TestMain): in a child it runs the node and exits; elsewhere it
// returns at once.
package nodeproc

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/asynkron/protoactor-go/actor"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/ringactor/ringactor/internal/stdio"
	ra "github.com/ringactor/ringactor/runtime"
	"github.com/ringactor/ringactor/runtime/cluster"
)

// envConfig carries a child's Config, as JSON.
const envConfig = "RINGACTOR_NODE_CHILD"

// Config is a child node's configuration.
type Config struct {
	Name       string
	Cluster    string
	Port       int // protoactor remote's port; 0 picks a free one
	ManagePort int
	Peers      []string
	RefreshTTL time.Duration
	// SimDevices is how many simulated devices the child has (default 2).
	SimDevices int
	// Echo spawns an actor named "echo" that answers every message with
	// itself: the baseline of the remote benchmark.
	Echo bool
	// TraceFile, when set, receives the child's spans as the stdout
	// exporter writes them, each as it ends.
	TraceFile string
}

// Main runs this process as a node if it was started as one, and exits;
// otherwise it returns.
func Main() {
	raw, ok := os.LookupEnv(envConfig)
	if !ok {
		return
	}
	var cfg Config
	if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
		fmt.Fprintf(os.Stderr, "nodeproc: bad %s: %v\n", envConfig, err)
		os.Exit(2)
	}
	// stdout is the protocol to the parent: whatever a library prints
	// there goes to stderr instead.
	if err := serve(cfg, os.Stdin, stdio.Claim()); err != nil {
		fmt.Fprintln(os.Stderr, "nodeproc:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// serve joins the cluster, says "ready <address>" on out, and runs until
// in closes or the process is told to stop.
func serve(cfg Config, in io.Reader, out io.Writer) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if cfg.SimDevices == 0 {
		cfg.SimDevices = 2
	}
	rcfg := ra.Config{Devices: ra.DeviceOptions{Backend: "sim", SimDevices: cfg.SimDevices}}
	if cfg.TraceFile != "" {
		f, err := os.Create(cfg.TraceFile)
		if err != nil {
			return err
		}
		defer f.Close()
		exp, err := stdouttrace.New(stdouttrace.WithWriter(f))
		if err != nil {
			return err
		}
		tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
		defer tp.Shutdown(context.Background())
		rcfg.TracerProvider = tp
	}
	rt, err := ra.New(rcfg)
	if err != nil {
		return err
	}
	jctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	node, err := cluster.Join(jctx, rt, cluster.NodeConfig{Name: cfg.Name, Cluster: cfg.Cluster, Port: cfg.Port,
		ManagePort: cfg.ManagePort, Peers: cfg.Peers, RefreshTTL: cfg.RefreshTTL})
	cancel()
	if err != nil {
		return err
	}
	if cfg.Echo {
		props := actor.PropsFromFunc(func(c actor.Context) {
			if m, ok := c.Message().(*wrapperspb.BytesValue); ok && c.Sender() != nil {
				c.Send(c.Sender(), m)
			}
		})
		if _, err := rt.System().Root.SpawnNamed(props, "echo"); err != nil {
			return err
		}
	}
	fmt.Fprintf(out, "ready %s\n", node.Address())
	closed := make(chan struct{})
	go func() {
		io.Copy(io.Discard, in)
		close(closed)
	}()
	select {
	case <-closed:
	case <-ctx.Done():
	}
	lctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return node.Leave(lctx)
}

// Proc is a running child node.
type Proc struct {
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	address string
	done    chan struct{}
	err     error
	stderr  *tail
}

// Start starts a child node and returns once it has joined its cluster, or
// when ctx ends.
func Start(ctx context.Context, cfg Config) (*Proc, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("nodeproc: find this executable: %w", err)
	}
	raw, _ := json.Marshal(cfg)
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), envConfig+"="+string(raw))
	p := &Proc{cmd: cmd, done: make(chan struct{}), stderr: &tail{}}
	cmd.Stderr = p.stderr
	if p.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("nodeproc: start node %q: %w", cfg.Name, err)
	}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if addr, ok := strings.CutPrefix(sc.Text(), "ready "); ok {
				ready <- addr
			}
		}
	}()
	select {
	case p.address = <-ready:
		return p, nil
	case <-p.done:
		return nil, fmt.Errorf("nodeproc: node %q exited before joining: %v: %s", cfg.Name, p.err, p.stderr)
	case <-ctx.Done():
		p.Kill()
		return nil, fmt.Errorf("nodeproc: node %q did not join: %w: %s", cfg.Name, ctx.Err(), p.stderr)
	}
}

// Address is where the child's protoactor remote listens.
func (p *Proc) Address() string { return p.address }

// Kill ends the child at once (SIGKILL), as a crash would, and waits for it.
func (p *Proc) Kill() {
	p.cmd.Process.Kill()
	<-p.done
}

// Pause stops the child (SIGSTOP), as a stalled host or a debugger would:
// it keeps its sockets but runs nothing until Resume.
func (p *Proc) Pause() error {
	if err := p.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		return fmt.Errorf("nodeproc: pause the node: %w", err)
	}
	return nil
}

// Resume lets a paused child run again (SIGCONT).
func (p *Proc) Resume() error {
	if err := p.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		return fmt.Errorf("nodeproc: resume the node: %w", err)
	}
	return nil
}

// Stop asks the child to leave its cluster and exit, and waits until it
// has or ctx ends (then it is killed).
func (p *Proc) Stop(ctx context.Context) error {
	p.stdin.Close()
	select {
	case <-p.done:
		return p.err
	case <-ctx.Done():
		p.Kill()
		return fmt.Errorf("nodeproc: node did not stop: %w", ctx.Err())
	}
}

// Stderr is the end of what the child wrote to stderr.
func (p *Proc) Stderr() string { return p.stderr.String() }

// FreePorts returns n TCP ports free on 127.0.0.1 now.
func FreePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("nodeproc: no free port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// tailMax is how much of a child's stderr a tail keeps.
const tailMax = 4096

// tail keeps the last tailMax bytes written to it, and counts the rest.
type tail struct {
	mu      sync.Mutex
	b       []byte
	dropped int
	last    byte // the last byte left out
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if over := len(t.b) - tailMax; over > 0 {
		t.b, t.dropped, t.last = t.b[over:], t.dropped+over, t.b[over-1]
	}
	return len(p), nil
}

// String is what the tail kept. Where it left the start out it begins at
// the first word it kept whole, after a mark saying how many bytes it left
// out, so an error quoting it never starts mid-word.
func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.dropped == 0 {
		return strings.TrimSpace(string(t.b))
	}
	b := t.b
	if unicode.IsSpace(rune(t.last)) { // the cut fell between words
		b = bytes.TrimLeftFunc(b, unicode.IsSpace)
	} else if i := bytes.IndexFunc(b, unicode.IsSpace); i >= 0 {
		b = bytes.TrimLeftFunc(b[i:], unicode.IsSpace)
	} else { // one word: start at a rune
		for len(b) > 0 && !utf8.RuneStart(b[0]) {
			b = b[1:]
		}
	}
	return fmt.Sprintf("(… %d bytes left out) %s", t.dropped+len(t.b)-len(b), strings.TrimRightFunc(string(b), unicode.IsSpace))
}
