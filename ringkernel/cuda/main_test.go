package cuda

import (
	"os"
	"testing"

	"github.com/ringactor/ringactor/cuda/cudatest"
)

// On the emulated driver, a call that broke a rule a real driver punishes
// fails the run (cudatest.CheckRules), beyond the rule tests' own.
func TestMain(m *testing.M) { os.Exit(cudatest.CheckRules(m.Run())) }
