// Package cuda binds the parts of CUDA that ringactor uses, loaded at run
// time with dlopen: the program builds with no CUDA headers or libraries and
// returns a clear error, naming what to install, where none is present.
// Without cgo the package still compiles; loading then fails with an error
// that says to rebuild with CGO_ENABLED=1.
//
// # Driver API
//
// LoadDriver loads the CUDA driver (libcuda) once per process. Lookup
// order: the path in the environment variable named by DriverEnv
// (RINGACTOR_LIBCUDA), which is then the only candidate; else
// "libcuda.so.1", then "libcuda.so", through the dynamic loader. Every
// driver function the package calls is resolved up front, by its exported
// name (the _v2 names where the driver versions them, such as
// cuMemAlloc_v2), so a driver that lacks one fails to load with an error
// naming it, rather than failing later. CUDA 11.0 or newer is needed. The
// graph API is the exception: it is resolved where present, and without it
// only the graph calls fail (with an error wrapping ErrUnsupported). A
// driver that loads but cannot start (cuInit fails, for example with
// CUDA_ERROR_NO_DEVICE) is reported as that *Error.
//
// Devices and their attributes need no context. Everything else (memory,
// modules, launches, streams, events, peer access) goes through a Context,
// the device's retained primary context. CUDA's current context is a
// property of the OS thread, and goroutines move between threads, so every
// such call locks its goroutine to its thread, makes the context current,
// calls the driver and unlocks again: contexts and the handles made from
// them may be used from any goroutine, concurrently.
//
// Memory: Alloc gives device memory; AllocHost gives page-locked host
// memory mapped into the device's address space (DEVICEMAP, and PORTABLE
// for memory shared by several GPUs), zeroed, with a host view (Bytes) and
// a device address (Device). Go-heap memory is never handed to the device:
// copies pass Go slices only for the length of the call, and kernel
// arguments are copied into C memory for the launch. The async copies
// (CopyToDeviceAsync, CopyFromDeviceAsync) take AllocHost memory, which is
// page-locked C memory, since the driver uses it after the call returns.
//
// Graphs: Stream.BeginCapture records the copies and launches issued to a
// stream, EndCapture returns them as a Graph, Instantiate makes a
// GraphExec, and GraphExec.Launch replays the whole sequence with one call
// (cuStreamBeginCapture_v2 in relaxed mode, cuStreamEndCapture,
// cuGraphInstantiateWithFlags or cuGraphInstantiate_v2, cuGraphLaunch).
//
// Errors: a failed driver call is an *Error carrying the call, the CUresult
// and the driver's name and text for it ("cuda: cuMemAlloc_v2:
// CUDA_ERROR_OUT_OF_MEMORY (out of memory)"); a failed module load adds
// the JIT error log. errors.Is(err, &cuda.Error{Result: r}) tests for a
// result. Handles refuse use after Release, Free, Unload or Destroy with an
// error wrapping ErrReleased, and device pointers are checked against the
// live allocations before a copy or memset, so a stale pointer is an error,
// not a fault.
//
// Tests run the binding against the emulated driver (internal/cudaemu),
// the project's one stand-in libcuda, built with the C++ compiler, so no
// GPU is needed: its variants lack the entry points of older drivers, and
// its environment variables shape the devices and make cuInit fail. The
// GPU tests (gpu_test.go) run on a real GPU or on the emulator where
// RINGACTOR_LIBCUDA names it (make test), skip with the reason where there
// is neither, or fail where RINGACTOR_REQUIRE_GPU=1 (see package cudatest).
//
// # NVRTC
//
// LoadNVRTC loads NVRTC, the run-time compiler that turns the kernels' CUDA
// C++ into PTX. Library lookup order: the path in the environment variable
// named by NVRTCEnv, then the usual sonames through the dynamic loader, then
// the usual CUDA install folders.
package cuda
