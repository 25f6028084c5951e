package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/ringactor/ringactor/internal/bench"
	"github.com/ringactor/ringactor/internal/nodeproc"
	"github.com/ringactor/ringactor/internal/racecheck"
)

// runMainEnv makes this test binary run the command itself (main), so a
// test can run the real command, flags, stdout and all.
const runMainEnv = "RINGACTOR_TEST_RUN_MAIN"

// TestMain lets this test binary be the peer node of `bench`'s remote rows,
// or the command itself.
func TestMain(m *testing.M) {
	if os.Getenv(runMainEnv) == "1" {
		main() // as the real binary: its peer node is this binary again, through main
		os.Exit(0)
	}
	nodeproc.Main()
	os.Exit(m.Run())
}

// `ringactor bench -json` prints one JSON document on stdout and nothing
// else, with the remote rows too, whose cluster provider announces its
// HTTP server on os.Stdout.
func TestRemoteBenchJSONIsPureJSON(t *testing.T) {
	if racecheck.Enabled {
		t.Skip(racecheck.Reason)
	}
	cmd := exec.Command(os.Args[0], "bench", "-quick", "-json", "-only", "remote/")
	cmd.Env = append(os.Environ(), runMainEnv+"=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v\nstderr:\n%s", err, stderr.String())
	}
	var rows []bench.Row
	dec := json.NewDecoder(bytes.NewReader(stdout.Bytes()))
	if err := dec.Decode(&rows); err != nil {
		t.Fatalf("stdout is not one JSON document: %v\nstdout:\n%s", err, stdout.String())
	}
	if dec.More() {
		t.Fatalf("stdout has more than the JSON document:\n%s", stdout.String())
	}
	if len(rows) == 0 || !strings.HasPrefix(rows[0].Name, "remote/") {
		t.Fatalf("rows %+v", rows)
	}
	t.Logf("%d rows; stderr had %d bytes", len(rows), stderr.Len())
}
