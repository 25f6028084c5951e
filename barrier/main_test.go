package barrier_test

import (
	"testing"

	"go.uber.org/goleak"
)

// Every test must stop the goroutines it starts.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
