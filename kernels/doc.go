// Package kernels holds the stage functions of ringactor, each twice: CUDA
// C++ (cuda/*.cu, over the device helpers of cuda/ringactor.cuh) and a Go
// reference (ops.go) that the simulated backend runs and tests compare
// against. Ops are registered by name; user-defined stages use the same
// Register path.
//
// # Device code
//
// cuda/ringactor.cuh holds the queue access with the memory orders of
// docs/ARCHITECTURE.md §2 (each rule once), the globaltimer clock, the
// __nanosleep backoff, and the persistent loop (ra_ring_loop, described in
// docs/ARCHITECTURE.md §4): thread 0 of one block is the only agent on the
// links, the block's threads run the stage over a batch (one message each),
// results are published in order and in-slots freed after the batch; the
// loop reads the command word every few iterations, so terminate always
// ends it. RingSource wraps an op's stage function in that loop.
//
// # User-defined stages
//
// A user registers an Op with a Go function (for the sim backend and tests)
// and CUDA source defining RA_STAGE(<Symbol(name)>): a device function
// int f(const float *params, float *state, const float *in, int n, float
// *out, int out_cap) returning the floats written or a negative
// RA_STAGE_ERR_* code, which dead-letters the message. Build compiles it
// through NVRTC when a kernel launches, cached by source hash.
//
// # Typed stages
//
// Messages carry a type id (TypeFloats, TypeKeyed, or a user type's from
// FirstUserType on). An Op with Typed instead of Go is a typed stage: it
// takes type In and gives type Out (TypeAny: any), sees the payload as
// bytes and writes its result's bytes and type; its CUDA side is
// RA_TYPED_STAGE(<Symbol(name)>), int f(const float *params, float *state,
// unsigned in_type, const unsigned char *in, int len, unsigned *out_type,
// unsigned char *out, int out_cap, int *port). A fixed-layout Go struct
// (LayoutOf) is read there as the C struct Layout.C writes;
// include/ringactor_types.h holds the built-ins' (Keyed as ra_keyed). The
// built-in typed ops:
//   - pass: any message, handed on unchanged with its type (a router or a
//     merge in a typed graph; Build takes its type from its neighbours);
//   - keyed_scale: a Keyed with each of its eight Values times params[0]
//     (Key and Count unchanged);
//   - keyed_sum: a Keyed to a float32 vector [float32(Key), the sum of its
//     eight Values];
//   - keyed_count: a Keyed handed on with Count set to how many messages
//     of its key (Key mod KeyedCountKeys, 256) this stage has seen, this
//     one included (its state is the counts: Build requires the stage
//     Stateful).
//
// # Shipped PTX
//
// The built-ins' ring kernels ship as PTX for compute_70 under ptx/,
// embedded with go:embed and built by `make ptx` (kernels/internal/genptx);
// `make check-ptx` fails when they differ from a fresh build, so a GPU
// machine needs only the driver.
//
// The layout's single source of truth is the constants of package p2pqueue;
// `go generate ./kernels/...` writes them into include/ringactor_layout.h,
// and a test fails when the checked-in header is stale.
package kernels

import _ "embed"

//go:generate go run ./internal/genlayout -o include/ringactor_layout.h -types include/ringactor_types.h

// LayoutHeader is include/ringactor_layout.h, handed to NVRTC as an include
// so run-time compiles see the same layout as the Go side.
//
//go:embed include/ringactor_layout.h
var LayoutHeader string

// LayoutHeaderName is the name kernels #include the layout header by.
const LayoutHeaderName = "ringactor_layout.h"

// typesHeader is include/ringactor_types.h, the C structs of the built-in
// fixed-layout message types (TypesHeaderName), for stages that read them.
//
//go:embed include/ringactor_types.h
var typesHeader string
