package devlist_test

import (
	"errors"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/ringactor/ringactor/internal/devlist"
	ra "github.com/ringactor/ringactor/runtime"
)

// simRegistry is a runtime's registry of n simulated GPUs joined as topo
// says, and the CPU: what the commands read their lists against.
func simRegistry(t *testing.T, n int, topo string) *ra.Registry {
	t.Helper()
	r, err := ra.DiscoverDevices(ra.DeviceOptions{Backend: "sim", SimDevices: n, SimP2P: topo, Log: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// parse is Parse against r, as the commands call it.
func parse(s string, n int, r *ra.Registry) ([]int, error) {
	id := func(name string) (int, error) { d, err := r.Lookup(name); return d.ID, err }
	return devlist.Parse(s, n, id, r.Chain, ra.ErrNoDevice)
}

func TestParse(t *testing.T) {
	r := simRegistry(t, 3, "1-2:nv2,*:sys")
	for s, want := range map[string][]int{"auto": {0, 1, 2}, "cpu": {3, 3, 3}, " 0, cpu ,2": {0, 3, 2}, "1": {1, 1, 1}} {
		if got, err := parse(s, 3, r); err != nil || !slices.Equal(got, want) {
			t.Errorf("Parse(%q) = %v, %v; want %v", s, got, err, want)
		}
	}
	for s, want := range map[string]string{"0,1": "names 2 devices", "0,7,1": "no such device 7: GPUs are 0..2 and the CPU is 3", "0,gpu,1": `"gpu"`,
		// an unknown device is named before the list's length is counted
		"0,7": "no such device 7: GPUs are 0..2 and the CPU is 3", "gpu,1": `"gpu"`} {
		_, err := parse(s, 3, r)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q): %v, want an error saying %s", s, err, want)
		}
		if !errors.Is(err, ra.ErrNoDevice) {
			t.Errorf("Parse(%q): %v does not wrap ErrNoDevice", s, err)
		}
	}
}

// The deprecated Registry.DeviceList reads lists as Parse does.
func TestRegistryDeviceListIsParse(t *testing.T) {
	r := simRegistry(t, 2, "")
	for _, s := range []string{"auto", "cpu", "0,cpu,1", "0,1", "7"} {
		want, werr := parse(s, 3, r)
		got, err := r.DeviceList(s, 3) //lint:ignore SA1019 the deprecated form is what is tested
		if !slices.Equal(got, want) || (err == nil) != (werr == nil) || (err != nil && err.Error() != werr.Error()) {
			t.Errorf("DeviceList(%q) = %v, %v; Parse: %v, %v", s, got, err, want, werr)
		}
	}
}
