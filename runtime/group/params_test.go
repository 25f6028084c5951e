package group_test

import (
	"errors"
	"strings"
	"sync"
	"testing"

	ra "github.com/ringactor/ringactor/runtime"
	"github.com/ringactor/ringactor/runtime/group"
)

// DeviceParams gives one instance its own params: under the static split
// (message k to instance k mod n) every second message is scaled by the
// second device's factor, the rest by Stage.Params'.
func TestGroupDeviceParams(t *testing.T) {
	rt := groupEnv(t, nil, nil)
	devs := devices(t, 2)
	var mu sync.Mutex
	got := map[float32]int{} // result value: messages
	g, err := group.New(ctxT(t), rt, group.Spec{Name: "params", Devices: devs, Policy: group.Static,
		Stage:        ra.StageSpec{Name: "x", Op: "scale", Params: []float32{2}, Capacity: 64},
		DeviceParams: map[int][]float32{devs[1]: {10}},
		Deliver:      ra.Sink{Func: func(r ra.Result) { mu.Lock(); got[r.Floats[0]]++; mu.Unlock() }},
	})
	if err != nil {
		t.Fatal(err)
	}
	ds := make([]ra.Data, 20)
	for i := range ds {
		ds[i].Floats = []float32{1}
	}
	if _, err := g.SendBatch(ctxT(t), ds); err != nil {
		t.Fatal(err)
	}
	if err := g.Close(ctxT(t), true); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if got[2] != 10 || got[10] != 10 || len(got) != 2 {
		t.Fatalf("results by value %v, want 10 scaled by 2 (device %d) and 10 by 10 (device %d)", got, devs[0], devs[1])
	}

	// Params for a device the group does not run on are refused, naming
	// it; params of the wrong length are refused by the build, naming the
	// instance.
	for _, c := range []struct {
		params map[int][]float32
		want   string
	}{
		{map[int][]float32{99: {3}}, "DeviceParams for device 99, which is not in Devices"},
		{map[int][]float32{devs[0]: {3, 4}}, "takes 1 params"},
	} {
		_, err := group.New(ctxT(t), rt, group.Spec{Name: "bad-params", Devices: devs,
			Stage: ra.StageSpec{Name: "x", Op: "scale", Params: []float32{2}}, DeviceParams: c.params})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("DeviceParams %v: %v, want an error saying %q", c.params, err, c.want)
		}
		if c.want[0] == 'D' && !errors.Is(err, group.ErrBadSpec) {
			t.Errorf("DeviceParams %v: %v does not wrap ErrBadSpec", c.params, err)
		}
	}
}
