// Package cuda is the ring-kernel backend for NVIDIA GPUs: each kernel is
// one persistent block launched once on its own non-blocking stream, whose
// loop (kernels/cuda/ringactor.cuh) reads the control block and its links
// until told to stop.
//
// Memory. Control blocks, trace rings and links the host touches live in
// mapped pinned host memory (cuMemHostAlloc with DEVICEMAP; PORTABLE for a
// link shared by two GPUs without peer access); a link between two kernels
// lives in the consumer's device memory. All of it is sub-allocated from
// per-device arenas taken from the driver before the first kernel starts,
// because a driver allocation or free can wait for running kernels, and
// ring kernels never finish on their own.
//
// Forward progress. Every kernel's block must be resident at once, so the
// backend keeps a per-device budget from the occupancy query and refuses a
// launch that would not fit, saying how many fit. It refuses to start at
// all under CUDA_LAUNCH_BLOCKING=1, which serialises launches and would
// hang the first persistent kernel's host.
//
// Clocks. Kernels stamp %globaltimer; at first use of a device the backend
// runs a one-thread clock kernel between two host readings and keeps the
// offset, so trace records convert to host time.
package cuda
