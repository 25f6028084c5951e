package rttest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"testing"
)

// ChildEnv names the test a child process started by ChildOutput runs.
const ChildEnv = "RINGACTOR_RTTEST_CHILD"

// InChild reports whether this process is the child ChildOutput started
// for t: the test then does its work and ends with ChildExit.
func InChild(t testing.TB) bool { return os.Getenv(ChildEnv) == t.Name() }

// ChildOutput runs t's test again in a child process (this test binary,
// with env added to its environment), whose standard output and error are
// pipes, and returns what it wrote on each. It fails t if the child does
// not exit with status 0. For tests of what a process prints: the child
// ends with ChildExit before the testing package prints anything.
func ChildOutput(t testing.TB, env ...string) (stdout, stderr []byte) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+t.Name()+"$", "-test.count=1")
	cmd.Env = append(append(os.Environ(), ChildEnv+"="+t.Name()), env...)
	if testing.CoverMode() != "" { // where the child's coverage goes, not a warning on its stderr
		cmd.Env = append(cmd.Env, "GOCOVERDIR="+t.TempDir())
	}
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("child process: %v\nstdout:\n%s\nstderr:\n%s", err, out.Bytes(), errOut.Bytes())
	}
	return out.Bytes(), errOut.Bytes()
}

// ChildExit ends the child process: status 0 when err is nil, else err on
// standard error and status 1. It does not return.
func ChildExit(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		os.Exit(1)
	}
	os.Exit(0)
}
