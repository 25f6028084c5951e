// Package devreg is the runtime's devices: which backend kind is opened
// for a program's options (Open, Discover), the registry of that
// backend's GPUs and the CPU built from what the backends list
// (Registry: lookup, selection, connections, chains), the Mux that
// routes a device id to the GPUs' backend or the CPU's engine, opening
// devices before a build (OpenDevices, SupportsOp), and the one line
// that says what was found.
//
// It picks among the registered backend kinds as data (ringkernel.Kind)
// and asks the backends (ringkernel.DeviceLister, Supporter, Sampler,
// DeviceOpener); it names no backend but the simulator, whose CPU engine
// runs the CPU device, and imports no actors and no telemetry.
// runtime.Registry wraps a *Registry; its public methods forward here,
// and the error texts they return are made here.
package devreg
