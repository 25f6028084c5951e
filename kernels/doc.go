// Package kernels holds the CUDA side of ringactor. Today that is the
// generated header giving device code the link-queue layout; the ring-kernel
// loop and the stage functions join it here.
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
