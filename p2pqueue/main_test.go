package p2pqueue

import (
	"testing"

	"go.uber.org/goleak"
)

// Every test must stop the goroutines it starts.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// mustQueue returns a fresh host queue of the given shape with both sides
// claimed, and the doorbell set first if one is given.
func mustQueue(t testing.TB, capacity uint32, payload int, bell ...*Doorbell) (*Link, *Producer, *Consumer) {
	t.Helper()
	l, err := NewHostQueue(ConfigFor(capacity, payload))
	if err != nil {
		t.Fatal(err)
	}
	if len(bell) > 0 {
		l.SetDoorbell(bell[0])
	}
	p, err := l.Producer()
	if err != nil {
		t.Fatal(err)
	}
	c, err := l.Consumer()
	if err != nil {
		t.Fatal(err)
	}
	return l, p, c
}
