package barrier

import (
	_ "embed"
)

// CUDAHeaderName is the include name of the device-side barrier:
// #include "ra_barrier.cuh" with CUDAHeader as its text among NVRTC's
// headers, beside the kernels package's (it includes ringactor.cuh).
const CUDAHeaderName = "ra_barrier.cuh"

//go:embed cuda/ra_barrier.cuh
var cudaBody string

// CUDAHeader is the device-side barrier's source, cuda/ra_barrier.cuh.
// The layout #defines it uses (RA_BAR_*) are this package's constants,
// generated into kernels/include/ringactor_layout.h with the rest of the
// layout (`go generate ./kernels/...`), and the arrive and the one-round
// poll it builds on are ringactor.cuh's, which the ring kernels' loop
// uses for CmdBarrier: one definition of each.
var CUDAHeader = cudaBody
