// Package cudatest gives tests the CUDA libraries they need, or skips them
// with the reason, or fails them where the environment demands the library.
package cudatest

import (
	"os"
	"testing"

	"github.com/ringactor/ringactor/cuda"
)

// RequireNVRTCEnv, set to 1, turns a missing NVRTC from a skip into a
// failure (CI sets it after installing NVRTC).
const RequireNVRTCEnv = "RINGACTOR_REQUIRE_NVRTC"

// NVRTC returns the loaded NVRTC, or skips t with the reason it could not be
// loaded, or fails t when RINGACTOR_REQUIRE_NVRTC=1.
func NVRTC(t testing.TB) *cuda.NVRTC {
	t.Helper()
	n, err := cuda.LoadNVRTC()
	if err != nil {
		if os.Getenv(RequireNVRTCEnv) == "1" {
			t.Fatalf("%s=1 but: %v", RequireNVRTCEnv, err)
		}
		t.Skipf("skipping: %v", err)
	}
	return n
}
