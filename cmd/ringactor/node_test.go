package main

import (
	"os"
	"testing"

	"github.com/ringactor/ringactor/internal/nodeproc"
)

// TestMain lets this test binary be the peer node of `bench`'s remote rows.
func TestMain(m *testing.M) {
	nodeproc.Main()
	os.Exit(m.Run())
}
