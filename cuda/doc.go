// Package cuda binds the parts of CUDA that ringactor uses, loaded at run
// time with dlopen: the program builds with no CUDA headers or libraries and
// returns a clear error, naming what to install, where none is present.
//
// Today it binds NVRTC, the run-time compiler that turns the kernels' CUDA
// C++ into PTX. Library lookup order: the path in the environment variable
// named by NVRTCEnv, then the usual sonames through the dynamic loader, then
// the usual CUDA install folders.
package cuda
