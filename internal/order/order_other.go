//go:build !amd64 || race

package order

import "sync/atomic"

// storeRelease64 falls back to sync/atomic: on arm64 that is STLR, a release
// store; under the race detector it records the happens-before edge.
func storeRelease64(p *uint64, v uint64) { atomic.StoreUint64(p, v) }
