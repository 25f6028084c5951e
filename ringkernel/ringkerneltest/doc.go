// Package ringkerneltest is the conformance suite of ring-kernel backends,
// as net/http/httptest is the test kit of HTTP handlers and ggml's
// test-backend-ops runs every op on every backend. A backend's own tests
// call Run with a function that returns the backend under test:
//
//	func TestConformance(t *testing.T) {
//		ringkerneltest.Run(t, func(testing.TB) ringkernel.Backend { return sim.New(4) },
//			ringkerneltest.Options{Name: "sim", Devices: 4})
//	}
//
// Run runs every case (Cases lists them) as a subtest: every built-in op
// against an independent reference, lifecycle commands and their refusals,
// terminate with and without drain, heartbeats, status and its conserved
// counters under load, trace records and their clock, dead letters (stage
// errors, undecodable and oversize messages, missing keys), routes (one,
// all, round-robin, key, port), typed messages, fan-in, a corrupt link, bad
// specs, a two-stage chain over a device-memory link, a stress run, a hung
// stage function, work stealing and a user-defined stage. Each case
// launches its kernels through ringkernel.Launch, puts its links in memory
// the backend allocates, and stops and frees all of it before it returns.
//
// Run is the one entry point. The cases of what a user brings (buffers,
// bound buffers, a user stage, a hung Go stage function) live in the
// sub-package internal/usertest, split out by concern: Run lists them under
// the same names and hands them its helpers through usertest.Suite.
//
// What a backend cannot run it says in one place, its Options.Lacks: each
// Capability it lacks, with the reason. The cases that need it skip with
// that reason, so `go test -v` shows why. A backend that cannot start here
// (no driver) skips or fails in newBackend: package cuda/cudatest's
// Driver skips without a driver, and fails instead under
// RINGACTOR_REQUIRE_GPU=1.
package ringkerneltest
