package stdio

import (
	"os"
	"sync"
	"testing"
)

// Claim hands out the real stdout, every time, and leaves os.Stdout
// pointing at stderr.
func TestClaimIsIdempotent(t *testing.T) {
	once, out = sync.Once{}, nil // a fresh process's state, for -count=N
	real := os.Stdout
	defer func() { os.Stdout = real }()
	first := Claim()
	if first != real || os.Stdout != os.Stderr {
		t.Fatalf("first claim: got %v, os.Stdout %v", first.Name(), os.Stdout.Name())
	}
	if again := Claim(); again != real {
		t.Fatalf("second claim returned %v, want the real stdout", again.Name())
	}
}
