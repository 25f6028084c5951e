// Package cudatest gives tests the CUDA libraries and devices they need, or
// skips them with the reason, or fails them where the environment demands
// what is missing.
package cudatest

import (
	"os"
	"testing"

	"github.com/ringactor/ringactor/cuda"
)

// RequireNVRTCEnv, set to 1, turns a missing NVRTC from a skip into a
// failure (CI sets it after installing NVRTC).
const RequireNVRTCEnv = "RINGACTOR_REQUIRE_NVRTC"

// RequireGPUEnv, set to 1, turns a missing driver or GPU from a skip into a
// failure (set it on GPU machines, so that a broken driver cannot pass as
// "no GPU here"). It demands a GPU, not a number of them: a test that asks
// for device 1 on a one-GPU machine still skips.
const RequireGPUEnv = "RINGACTOR_REQUIRE_GPU"

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

// noGPU skips t with the reason, or fails it when RINGACTOR_REQUIRE_GPU=1.
func noGPU(t testing.TB, format string, args ...any) {
	t.Helper()
	if os.Getenv(RequireGPUEnv) == "1" {
		t.Fatalf(RequireGPUEnv+"=1 but no GPU: "+format, args...)
	}
	t.Skipf("skipping: no GPU: "+format, args...)
}

// Driver returns the CUDA driver (cuda.LoadDriver), or skips t with the
// reason it could not be loaded, or fails t when RINGACTOR_REQUIRE_GPU=1.
func Driver(t testing.TB) *cuda.Driver {
	t.Helper()
	d, err := cuda.LoadDriver()
	if err != nil {
		noGPU(t, "%v", err)
	}
	return d
}

// Device returns the GPU with the given ordinal, or skips t (fails it when
// RINGACTOR_REQUIRE_GPU=1 and there is no GPU at all) with the reason.
func Device(t testing.TB, ordinal int) *cuda.Device {
	t.Helper()
	d := Driver(t)
	n, err := d.DeviceCount()
	if err != nil {
		noGPU(t, "driver %s loaded but counting devices failed: %v", d.Path(), err)
	}
	if n == 0 {
		noGPU(t, "driver %s loaded but no devices (check nvidia-smi and CUDA_VISIBLE_DEVICES)", d.Path())
	}
	if ordinal >= n {
		t.Skipf("skipping: the test needs GPU %d, the driver sees %d", ordinal, n)
	}
	dev, err := d.Device(ordinal)
	if err != nil {
		t.Fatalf("device %d: %v", ordinal, err)
	}
	return dev
}

// Context retains the primary context of GPU ordinal for the test and
// releases it in t.Cleanup; it skips like Device.
func Context(t testing.TB, ordinal int) *cuda.Context {
	t.Helper()
	dev := Device(t, ordinal)
	c, err := dev.PrimaryContext()
	if err != nil {
		t.Fatalf("device %d: %v", ordinal, err)
	}
	t.Cleanup(func() {
		if err := c.Release(); err != nil {
			t.Errorf("releasing device %d's context: %v", ordinal, err)
		}
	})
	return c
}
