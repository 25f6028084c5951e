package cluster_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ringactor/ringactor/internal/demo"
	"github.com/ringactor/ringactor/internal/rttest"
	ra "github.com/ringactor/ringactor/runtime"
	"github.com/ringactor/ringactor/runtime/cluster"
)

// Joining a cluster prints nothing: a runtime with no Config.Logger joins
// a one-node cluster through the fixed-host-list provider (its health
// checks on a manage port, protoactor remote and cluster beside it), runs
// a pipeline on it, leaves and closes, and nothing is written on the
// process's standard output (where protoactor's automanaged provider
// announced its HTTP server) or error. It runs in a child process whose
// stdout and stderr are pipes this test reads. One node and no peer: no
// member ever leaves, so protoactor's BlockList race (internal/racecheck)
// cannot happen, and this runs under -race too.
func TestJoinPrintsNothingWithoutLogger(t *testing.T) {
	if rttest.InChild(t) {
		rttest.ChildExit(joinQuietly(ra.Config{Devices: ra.DeviceOptions{Backend: "sim", SimDevices: 1}}))
	}
	out, errOut := rttest.ChildOutput(t)
	if len(out) != 0 || len(errOut) != 0 {
		t.Fatalf("a node with no logger printed:\nstdout: %q\nstderr: %q", out, errOut)
	}
}

// logFileEnv is where TestJoinLogsToTheLogger's child writes its records.
const logFileEnv = "RINGACTOR_TEST_LOG_FILE"

// With Config.Logger, protoactor's remote and cluster log there
// (component=protoactor), and nothing is printed.
func TestJoinLogsToTheLogger(t *testing.T) {
	if rttest.InChild(t) {
		f, err := os.Create(os.Getenv(logFileEnv))
		if err != nil {
			rttest.ChildExit(err)
		}
		err = joinQuietly(ra.Config{Devices: ra.DeviceOptions{Backend: "sim", SimDevices: 1}, Logger: slog.New(slog.NewJSONHandler(f, nil))})
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		rttest.ChildExit(err)
	}
	file := filepath.Join(t.TempDir(), "log.json")
	out, errOut := rttest.ChildOutput(t, logFileEnv+"="+file)
	if len(out) != 0 || len(errOut) != 0 {
		t.Fatalf("a node with a logger printed:\nstdout: %q\nstderr: %q", out, errOut)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var notes, remote, member int
	for s := bufio.NewScanner(bytes.NewReader(data)); s.Scan(); {
		var r map[string]any
		if err := json.Unmarshal(s.Bytes(), &r); err != nil {
			t.Fatalf("record %q: %v", s.Text(), err)
		}
		msg := fmt.Sprint(r["msg"])
		switch {
		case msg == "ringactor devices":
			notes++
		case r["component"] != "protoactor":
		case strings.Contains(msg, "Starting remote"):
			remote++
		case strings.Contains(msg, "Starting Proto.Actor cluster member"):
			member++
		}
	}
	if notes != 1 || remote == 0 || member == 0 {
		t.Fatalf("want the device note, and protoactor's remote and cluster starting (component=protoactor); got %d, %d, %d in:\n%s", notes, remote, member, data)
	}
}

// joinQuietly makes a runtime of cfg, joins it as node "quiet" to a
// cluster of one through the fixed-host-list provider, runs the guide's
// pipeline on it (its stages naming the node), leaves and closes.
func joinQuietly(cfg ra.Config) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rt, err := ra.New(cfg)
	if err != nil {
		return err
	}
	defer rt.Close()
	l, err := net.Listen("tcp", "127.0.0.1:0") // a free port for the manage port
	if err != nil {
		return err
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	node, err := cluster.Join(ctx, rt, cluster.NodeConfig{Name: "quiet", Cluster: "quiet", ManagePort: port,
		Peers: []string{fmt.Sprintf("127.0.0.1:%d", port)}, RefreshTTL: 100 * time.Millisecond})
	if err != nil {
		return err
	}
	results := make(chan ra.Result, 10)
	spec := demo.Guide("quiet", [3]int{0, 0, 0})
	for i := range spec.Stages {
		spec.Stages[i].Node = "quiet"
	}
	spec.Deliver = ra.Sink{Chan: results}
	cp, err := node.Build(ctx, spec, cluster.ClusterOptions{})
	if err != nil {
		return err
	}
	for i := range 10 {
		if err := cp.Send(ctx, ra.Data{Floats: []float32{float32(i)}}); err != nil {
			return err
		}
	}
	if err := cp.Close(ctx, true); err != nil {
		return err
	}
	if len(results) != 10 {
		return fmt.Errorf("%d results of 10", len(results))
	}
	if err := node.Leave(ctx); err != nil {
		return err
	}
	return rt.Close()
}
