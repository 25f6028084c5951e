package collective

import (
	"testing"

	ra "github.com/ringactor/ringactor/runtime"
)

// AfterDataMoves calls f with each AllReduce's pipelines once its data
// has moved, before they close, until the test ends.
func AfterDataMoves(t *testing.T, f func(pipes []*ra.Pipeline)) {
	testBeforeClose = f
	t.Cleanup(func() { testBeforeClose = nil })
}

// MisplaceChunk makes DeviceLinks' first message of chunk ch name an
// offset past its chunk's end, until the test ends.
func MisplaceChunk(t *testing.T, ch int) {
	testBeforeSend = func(pieces []piece) {
		for _, p := range pieces {
			if p.chunk == ch {
				p.floats[0] = 1 << 22
				return
			}
		}
	}
	t.Cleanup(func() { testBeforeSend = nil })
}
