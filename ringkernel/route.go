package ringkernel

import (
	"encoding/binary"
	"fmt"
)

// Route says which of a kernel's out-links gets each result. The device
// loop and the sim loop implement the same table; ResultRoute is its
// one Go definition, which the sim loop runs and tests check device code
// against.
type Route uint32

const (
	// RouteOne sends every result down the one out-link (a chain).
	RouteOne Route = iota
	// RouteAll sends a copy of every result down every out-link (fan-out):
	// each copy is a message of its own from there on, with the same id.
	RouteAll
	// RouteRoundRobin sends the results down the out-links in turn.
	RouteRoundRobin
	// RouteKey sends a result down out-link KeyHash(key) mod the number of
	// out-links, where key is the u32 at Spec.KeyOffset in the result: one
	// key always reaches the same out-link, so a stateful stage behind it
	// sees every message of its keys.
	RouteKey
	// RoutePort sends a result down the out-link whose index the stage
	// function returned (an op with Ports; see kernels.Op).
	RoutePort
)

func (r Route) String() string {
	switch r {
	case RouteOne:
		return "one"
	case RouteAll:
		return "all"
	case RouteRoundRobin:
		return "round-robin"
	case RouteKey:
		return "key"
	case RoutePort:
		return "port"
	}
	return fmt.Sprintf("Route(%d)", uint32(r))
}

// MaxDeviceOutLinks is how many out-links a kernel routes its results
// over (the launch argument block holds this many).
const MaxDeviceOutLinks = 8

// KeyHash mixes a 32-bit key (murmur3's finalizer), so keys that differ
// in few bits still spread over the out-links. Device code computes the
// same (ra_key_hash).
func KeyHash(k uint32) uint32 {
	k ^= k >> 16
	k *= 0x85ebca6b
	k ^= k >> 13
	k *= 0xc2b2ae35
	k ^= k >> 16
	return k
}

// ResultRoute is the out-link index a routed result goes to, for routes
// that pick one (RouteRoundRobin, RouteKey, RoutePort): rr is the count of
// results the kernel routed before this one, payload the result, port
// what the stage function returned. A code other than CodeNone
// dead-letters the result: a key past the payload's end, a port out of
// range.
func ResultRoute(r Route, outs int, rr uint64, payload []byte, keyOffset int, port int) (int, ErrorCode) {
	switch r {
	case RouteRoundRobin:
		return int(rr % uint64(outs)), CodeNone
	case RouteKey:
		if keyOffset < 0 || keyOffset+4 > len(payload) {
			return 0, CodeNoKey
		}
		return int(KeyHash(binary.LittleEndian.Uint32(payload[keyOffset:])) % uint32(outs)), CodeNone
	case RoutePort:
		if port < 0 || port >= outs {
			return 0, CodeBadPort
		}
		return port, CodeNone
	}
	return 0, CodeNone
}
