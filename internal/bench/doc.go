// Package bench is `ringactor bench`: every benchmark the machine can run,
// each beside what a Go user would use instead, measured in the same run.
//
// A comparison runs its candidate and its baselines over the same number
// of messages, round after round, rotating which goes first so that drift
// on a shared machine falls on all of them alike. A row's msgs/s is the
// median over its rounds; its ratio is that over the baseline row's. One
// message in sampleEvery carries a send timestamp that its receiver turns
// into a latency, and p50/p99 are percentiles of those, never averages.
//
// The rows:
//
//   - link/64B-single and link/64B-batch32: a p2pqueue host link against a
//     buffered Go channel of the same depth, one message or a 32-message
//     array per operation;
//   - pipeline/sim-3stage: x*2 → sqrt → +1 through ring kernels on three
//     simulated devices, against three plain protoactor-go actors and
//     against three goroutines joined by buffered channels; it appears
//     once per baseline;
//   - limit/3-stage-compute and limit/memcpy-64B: the pipeline's work and
//     its byte copies alone, in one goroutine (limit.go); every pipeline
//     row reports its share of the first as of_limit;
//   - pipeline/cuda-3stage: the same pipeline through the CUDA backend,
//     against pipeline/sim-3stage, when the devices opened are CUDA's (a
//     GPU, or the emulated driver);
//   - actor/send-to-stage: one Send per message to a stage's PID, into its
//     device mailbox, against protoactor/send to a plain actor;
//   - group/steal-skewed: a stage group on four simulated devices, one of
//     them four times slower, with work stealing, against the static split;
//   - p2p/<from>-<to>/<size>/{peer,staged}: for every ordered pair of the
//     machine's GPUs (or simulated devices), diagonal included, one ring
//     kernel moving 64 B, 1 KiB and 64 KiB messages to another over a peer
//     link against a host-staged one (ratio peer/staged, GB/s beside
//     msgs/s), printed as matrices too; see p2p.go for what is timed;
//   - gpu/...: package gpubench's rows, when a GPU is present.
package bench
