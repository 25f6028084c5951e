// Package sim is the simulated ring-kernel backend, the embedded default:
// each kernel is a goroutine looping over the same p2pqueue links and
// control-block layout a GPU kernel uses, in Go memory.
//
// It is built for machines with as few as two cores shared with producers,
// pumps and tests. A busy kernel takes a batch per step and writes results
// in place into its out-link's slots (no copy but the stage's own). An idle
// one yields a few times, then parks on a doorbell shared by all its
// in-links (p2pqueue.ParkAll) until a producer publishes or the host posts a
// command, waking at least every 50 ms so its heartbeat advances; an idle
// stage costs no CPU. Stateless stages with Workers > 1 split each batch
// among worker goroutines; stateful ones run on the loop goroutine alone.
//
// A stage function that panics is recovered where it runs: that message
// is dead-lettered ringkernel.CodePanic with the value and stack in its
// error (kept whole for the host, ringkernel.CauseKeeper), and the loop
// goes on.
//
// A Spec's Variant (the device loop a CUDA kernel runs, ringkernel.LoopWarp)
// is ignored: sim has one loop.
//
// Devices. A Backend lists simulated GPUs (ListDevices: Devices of them, or
// RINGACTOR_SIM_DEVICES, joined as Topology or RINGACTOR_SIM_P2P says), and
// NewCPU makes the engine of the host's CPU, listed as one device of kind
// "cpu". A simulated GPU stands for a real one and runs ops with a CUDA
// source; the CPU runs ops with a Go side (Supports). The package
// registers the "sim" kind, the one "auto" falls back to.
package sim
