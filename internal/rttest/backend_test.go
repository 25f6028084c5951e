package rttest

import (
	"strings"
	"testing"
)

// Every entry of the skip table names a capability with a name and gives
// a reason.
func TestSkipTableIsComplete(t *testing.T) {
	for b, caps := range Lacks {
		for c, why := range caps {
			if strings.HasPrefix(c.String(), "Capability(") || strings.TrimSpace(why) == "" {
				t.Errorf("%s: %v: %q", b, c, why)
			}
		}
	}
	for c := SimTopology; c <= PayloadBytes; c++ {
		if strings.HasPrefix(c.String(), "Capability(") {
			t.Errorf("capability %d has no name", int(c))
		}
	}
}
