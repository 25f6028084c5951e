// Package kernels holds the stage functions of ringactor, each twice: CUDA
// C++ (cuda/*.cu, over the device helpers of cuda/ringactor.cuh) and a Go
// reference (ops.go) that the simulated backend runs and tests compare
// against. Ops are registered by name; user-defined stages use the same
// Register path. The generated header gives device code the link-queue
// layout; the persistent ring-kernel loop joins it here.
//
// The layout's single source of truth is the constants of package p2pqueue;
// `go generate ./kernels/...` writes them into include/ringactor_layout.h,
// and a test fails when the checked-in header is stale.
package kernels

import _ "embed"

//go:generate go run ./internal/genlayout -o include/ringactor_layout.h

// LayoutHeader is include/ringactor_layout.h, handed to NVRTC as an include
// so run-time compiles see the same layout as the Go side.
//
//go:embed include/ringactor_layout.h
var LayoutHeader string

// LayoutHeaderName is the name kernels #include the layout header by.
const LayoutHeaderName = "ringactor_layout.h"
