package devlist

import (
	"fmt"
	"strings"

	rk "github.com/ringactor/ringactor/ringkernel"
)

// Resolver names devices and chains them over stages, as
// *runtime.Registry does (its Lookup and Chain).
type Resolver interface {
	// Lookup finds a device by its id ("2") or as "cpu", or says which
	// devices there are.
	Lookup(name string) (rk.Device, error)
	// Chain picks devices for n consecutive stages.
	Chain(n int) ([]int, error)
}

// Parse reads s as the devices of n stages: "auto" (r.Chain(n)), one
// device for all of them ("2", "cpu"), or one per stage ("0,cpu,2"), each
// named as r.Lookup takes it. A name that is no device is reported (with
// r's error, which says the ids there are) before a list of the wrong
// length, which is an error wrapping ringkernel.ErrNoDevice.
func Parse(s string, n int, r Resolver) ([]int, error) {
	s = strings.TrimSpace(s)
	if s == "auto" {
		return r.Chain(n)
	}
	names := strings.Split(s, ",")
	found := make([]int, len(names))
	for i, name := range names {
		d, err := r.Lookup(name)
		if err != nil {
			return nil, err
		}
		found[i] = d.ID
	}
	if len(names) != 1 && len(names) != n {
		return nil, fmt.Errorf("%w: %q names %d devices; give one per stage (%d), one for all, or auto", rk.ErrNoDevice, s, len(names), n)
	}
	ids := make([]int, n)
	for i := range ids {
		ids[i] = found[i%len(found)]
	}
	return ids, nil
}
