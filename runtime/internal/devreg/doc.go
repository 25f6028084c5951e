// Package devreg is the runtime's devices: which backend kind is opened
// for a program's options (Open, Discover), the ringkernel.Registry of
// that backend's GPUs and the CPU built from what the backends list, the
// Mux that routes a device id to the GPUs' backend or the CPU's engine,
// opening devices before a build (OpenDevices, SupportsOp), and the one
// line that says what was found.
//
// It picks among the registered backend kinds as data (ringkernel.Kind)
// and asks the backends (ringkernel.DeviceLister, Supporter, Sampler,
// DeviceOpener); it names no backend but the simulator, whose CPU engine
// runs the CPU device, and imports no actors and no telemetry. The
// registry's queries (lookup, selection, connections, chains) and their
// error texts are ringkernel's; runtime.Registry is that type.
package devreg
