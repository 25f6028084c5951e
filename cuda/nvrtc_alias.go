package cuda

import "github.com/ringactor/ringactor/cuda/nvrtc"

// The NVRTC binding moved to package cuda/nvrtc; these names stay for the
// code that used them here.
type (
	// Deprecated: use nvrtc.NVRTC.
	NVRTC = nvrtc.NVRTC
	// Deprecated: use nvrtc.Source.
	Source = nvrtc.Source
	// Deprecated: use nvrtc.CompileError.
	CompileError = nvrtc.CompileError
	// Deprecated: use nvrtc.Compiled.
	Compiled = nvrtc.Compiled
)

// Deprecated: use nvrtc.Env.
const NVRTCEnv = nvrtc.Env

// Deprecated: use nvrtc.ErrNoNVRTC.
var ErrNoNVRTC = nvrtc.ErrNoNVRTC

// LoadNVRTC is nvrtc.Load.
//
// Deprecated: use nvrtc.Load.
func LoadNVRTC() (*NVRTC, error) { return nvrtc.Load() }
