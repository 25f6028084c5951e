// Package usertest holds the conformance cases of what a user brings to a
// ring-kernel backend: device buffers (Buffers), buffers bound to a stage
// that an op registered at run time reads and writes (BoundBuffers), a
// user-defined stage (UserDefinedStage) and a registered Go stage function
// that hangs (FaultAbandonsAHungKernel).
//
// It is package ringkerneltest's, split out by concern as net/http keeps
// its heavy parts in sub-packages: ringkerneltest.Run stays the one entry
// point of backends and lists these cases under the same names
// (TestConformance/Buffers, ...), each a func(*testing.T, Suite) that it
// calls with its own helpers behind the narrow Suite interface. Nothing
// else imports it.
package usertest
