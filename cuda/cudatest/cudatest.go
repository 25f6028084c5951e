// Package cudatest gives tests the CUDA libraries and devices they need, or
// skips them with the reason, or fails them where the environment demands
// what is missing.
package cudatest

import (
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ringactor/ringactor/cuda"
	"github.com/ringactor/ringactor/cuda/nvrtc"
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
func NVRTC(t testing.TB) *nvrtc.NVRTC {
	t.Helper()
	n, err := nvrtc.Load()
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

// EmulatedPrefix begins the name of every device of the emulated driver
// (internal/cudaemu), which runs the device code on the CPU.
const EmulatedPrefix = "ringactor emulated GPU"

// attrViolations is the emulated driver's count of calls a real driver
// would hang or fail on (a device attribute no real driver has).
const attrViolations cuda.Attribute = 9100

// Emulated reports whether the driver that loads is the emulated one.
func Emulated() bool {
	d, err := cuda.LoadDriver()
	if err != nil {
		return false
	}
	dev, err := d.Device(0)
	if err != nil {
		return false
	}
	name, err := dev.Name()
	return err == nil && strings.HasPrefix(name, EmulatedPrefix)
}

// RealGPU skips t on the emulated driver: why says what only a GPU shows.
func RealGPU(t testing.TB, why string) {
	t.Helper()
	if Emulated() {
		t.Skipf("skipping on the emulated driver: %s", why)
	}
}

// violationCount reads the emulated driver's count of rule violations so
// far in this process: calls a real driver would hang or fail on.
func violationCount() (int, error) {
	if !Emulated() {
		return 0, nil
	}
	d, err := cuda.LoadDriver()
	if err != nil {
		return 0, err
	}
	dev, err := d.Device(0)
	if err != nil {
		return 0, err
	}
	return dev.Attribute(attrViolations)
}

// Violations is the emulated driver's count of rule violations so far in
// this process; 0 on a real driver.
func Violations(t testing.TB) int {
	t.Helper()
	n, err := violationCount()
	if err != nil {
		t.Fatalf("reading the emulator's violation count: %v", err)
	}
	return n
}

var allowed atomic.Int64

// AllowViolations records that t broke n rules on purpose (a test of the
// rule), so that CheckRules does not count them.
func AllowViolations(t testing.TB, n int) {
	t.Helper()
	allowed.Add(int64(n))
}

// CheckRules is for a TestMain, after the tests ran with result code: on
// the emulated driver it turns a passing run into a failing one when any
// call broke a rule a real driver punishes (a wait for the device or a
// module load under a running ring kernel, a call without a context)
// beyond those AllowViolations recorded. The emulator's stderr names each.
func CheckRules(code int) int {
	n, err := violationCount()
	if err != nil {
		fmt.Fprintln(os.Stderr, "cudatest: reading the emulator's violation count:", err)
		return 1
	}
	if extra := int64(n) - allowed.Load(); extra != 0 {
		fmt.Fprintf(os.Stderr, "cudatest: %d call(s) broke a rule of the emulated driver (%d on purpose): see the cudaemu: RULE VIOLATION lines above\n", n, allowed.Load())
		return 1
	}
	return code
}
