//go:build amd64 && !race

package order

// storeRelease64 is a plain MOVQ (order_amd64.s): a release store under TSO.
// The call is opaque to the compiler, so it cannot move earlier stores past it.
//
//go:noescape
func storeRelease64(p *uint64, v uint64)
