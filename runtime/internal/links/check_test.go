package links

import (
	"errors"
	"strings"
	"testing"

	"github.com/ringactor/ringactor/p2pqueue"
	rk "github.com/ringactor/ringactor/ringkernel"
)

func TestCheck(t *testing.T) {
	gpu := rk.Device{ID: 1, Name: "gpu", MemoryBytes: 1 << 30}
	for _, c := range []struct {
		s    Stage
		dev  rk.Device
		host uint64
		err  error
		says string
	}{
		{Stage{Name: "ok", Capacity: 1024, SlotSize: 256}, gpu, 1 << 34, nil, ""},
		{Stage{Name: "unknown memory", Capacity: 1024, SlotSize: 256}, rk.Device{}, 0, nil, ""},
		{Stage{Name: "s", Capacity: 1000, SlotSize: 256}, gpu, 0, p2pqueue.ErrBadCapacity, `stage "s": Capacity 1000: `},
		{Stage{Name: "s", Capacity: 0, SlotSize: 256}, gpu, 0, p2pqueue.ErrBadCapacity, "(0 for the default, 1024)"},
		{Stage{Name: "s", Capacity: 1024, SlotSize: 100}, gpu, 0, p2pqueue.ErrBadSlotSize, "(0 for the default, 256)"},
		{Stage{Name: "big", Capacity: 1 << 20, SlotSize: 4096}, gpu, 0, p2pqueue.ErrBadCapacity, "device 1 (gpu) has 1.0 GiB and this host unknown of memory; lower Capacity or SlotSize"},
		{Stage{Name: "big", Capacity: 1 << 20, SlotSize: 4096}, rk.Device{ID: 0, Name: "cpu"}, 1 << 30, p2pqueue.ErrBadCapacity, "this host 1.0 GiB of memory"},
	} {
		err := Check(c.s, c.dev, c.host, 1024, 256)
		if !errors.Is(err, c.err) || (err == nil) != (c.err == nil) || !strings.Contains(errString(err), c.says) {
			t.Errorf("Check(%+v): %v; want %v saying %q", c.s, err, c.err, c.says)
		}
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
