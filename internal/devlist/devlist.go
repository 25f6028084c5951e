package devlist

import (
	"fmt"
	"strings"
)

// Parse reads s as the devices of n stages: "auto" (chain(n)), one device
// for all of them ("2", "cpu"), or one per stage ("0,cpu,2"), each name
// given to id, which returns that device's id or an error saying which
// devices there are (ringkernel.Registry's Lookup and Chain, as a
// Registry's DeviceList passes them). A name that is no device is
// reported before a list of the wrong length, which is an error wrapping
// none (ringkernel.ErrNoDevice).
func Parse(s string, n int, id func(name string) (int, error), chain func(n int) ([]int, error), none error) ([]int, error) {
	s = strings.TrimSpace(s)
	if s == "auto" {
		return chain(n)
	}
	names := strings.Split(s, ",")
	found := make([]int, len(names))
	for i, name := range names {
		d, err := id(name)
		if err != nil {
			return nil, err
		}
		found[i] = d
	}
	if len(names) != 1 && len(names) != n {
		return nil, fmt.Errorf("%w: %q names %d devices; give one per stage (%d), one for all, or auto", none, s, len(names), n)
	}
	ids := make([]int, n)
	for i := range ids {
		ids[i] = found[i%len(found)]
	}
	return ids, nil
}
