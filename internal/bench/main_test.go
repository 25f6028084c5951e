package bench

import (
	"os"
	"testing"

	"github.com/ringactor/ringactor/internal/nodeproc"
)

// TestMain lets this test binary be the peer node of the remote
// comparison.
func TestMain(m *testing.M) {
	nodeproc.Main()
	os.Exit(m.Run())
}
