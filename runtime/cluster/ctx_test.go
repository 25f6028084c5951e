package cluster_test

import (
	"context"
	"errors"
	"io"
	"testing"

	"github.com/ringactor/ringactor/internal/rttest"
	ra "github.com/ringactor/ringactor/runtime"
	"github.com/ringactor/ringactor/runtime/cluster"
)

// A nil ctx is refused by Join before anything starts, not a panic.
func TestJoinRefusesANilContext(t *testing.T) {
	e := rttest.New(t, ra.DeviceOptions{Backend: "sim", SimDevices: 2, Log: io.Discard})
	var none context.Context
	if _, err := cluster.Join(none, e.RT, cluster.NodeConfig{}); !errors.Is(err, ra.ErrNilContext) {
		t.Fatalf("Join(nil ctx) = %v; want ErrNilContext", err)
	}
}
