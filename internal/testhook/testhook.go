// Package testhook holds switches that tests flip to take away an
// incidental order and show that the designed one holds alone. Nothing
// outside tests sets them.
package testhook

import "sync/atomic"

// SkipClaimRefresh, set, makes p2pqueue's Link.Producer and Link.Consumer
// skip the refresh of a device link's host shadow (a synchronous DtoH copy
// in the context of the device that holds the link). That copy happens to
// wait for the link's formatting copies on that device's legacy stream; a
// launch must not depend on it (ringkernel/cuda fences the other device
// explicitly: GPU-REVIEW D2).
var SkipClaimRefresh atomic.Bool
