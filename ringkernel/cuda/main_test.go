package cuda

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/ringactor/ringactor/cuda/cudatest"
)

// Every test must stop the goroutines it starts, kernels and backends
// included; on the emulated driver, a call that broke a rule a real driver
// punishes fails the run (cudatest.CheckRules), beyond the rule tests' own.
func TestMain(m *testing.M) { goleak.VerifyTestMain(checked{m}) }

type checked struct{ m *testing.M }

func (c checked) Run() int { return cudatest.CheckRules(c.m.Run()) }
