// Package meter is what the runtime measures and how it exports it
// (docs/ARCHITECTURE.md §5 and §12, docs/METRICS.md): the snapshot of
// devices, links and stages with rates over the time since the previous
// one (Rates), each stage's sampled latencies and their percentiles
// (Latencies), and the OpenTelemetry instruments of both (RegisterDevices
// for the runtime's, NewPipeline for a pipeline's).
//
// It is handed readings as plain values and closures (ring kernels'
// Status, links' counters, the backend's device samples, a pipeline's
// account) and computes into its own structs, which runtime's public
// Metrics types mirror field for field. It knows nothing of actors,
// traces or runtime's types. Rates and Latencies are pure (the clock is a
// field) and safe for concurrent use.
package meter
