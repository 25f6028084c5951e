package bench

import (
	"context"
	"sync/atomic"
	"time"
)

// The limit rows: what a pipeline of the guide's three stages cannot beat
// on this machine, measured beside the pipelines in the same rounds.
//
//   - limit/3-stage-compute is the work itself: the same inputs made the
//     same way, the same three stage functions applied in one goroutine,
//     no queues, no goroutines to hand over to.
//   - limit/memcpy-64B is moving the bytes: each 64-byte message copied
//     through as many rings of slots as the pipeline has links (ingress,
//     two between stages, egress), in one goroutine, with no work on it.
//
// A pipeline row's of_limit is its rate over limit/3-stage-compute's. On
// two cores a pipeline of five goroutines spends part of every message on
// handing it over, so it stays below 1; how far below is what the column
// shows.

// sink keeps a limit row's result alive, so its work is not optimised
// away.
var sink atomic.Value

// pipelineLinks is the number of links a message of the guide's pipeline
// crosses.
const pipelineLinks = 4

// compute3 applies the three stages to n messages in one goroutine.
func (s *simRuntime) compute3(ctx context.Context, n int, lat *latencies) (time.Duration, error) {
	var v [floats]float32
	var sum float32
	start := time.Now()
	for id := uint64(1); id <= uint64(n); id++ {
		for j := range v {
			v[j] = input(id, j)
		}
		lat.send(id)
		for i := range 3 {
			s.ops.apply(i, v[:])
		}
		sum += v[0]
		lat.arrive(id)
		if id%65536 == 0 {
			if err := ctx.Err(); err != nil {
				return 0, err
			}
		}
	}
	el := time.Since(start)
	sink.Store(sum)
	return el, nil
}

// memcpy64 copies n 64-byte messages through pipelineLinks rings of
// linkDepth slots each.
func memcpy64(ctx context.Context, n int, lat *latencies) (time.Duration, error) {
	var rings [pipelineLinks][linkDepth][linkPayload]byte
	var m [linkPayload]byte
	start := time.Now()
	for id := uint64(1); id <= uint64(n); id++ {
		m[0], m[1] = byte(id), byte(id>>8)
		lat.send(id)
		k := id % linkDepth
		rings[0][k] = m
		for r := 1; r < pipelineLinks; r++ {
			rings[r][k] = rings[r-1][k]
		}
		m = rings[pipelineLinks-1][k]
		lat.arrive(id)
		if id%65536 == 0 {
			if err := ctx.Err(); err != nil {
				return 0, err
			}
		}
	}
	el := time.Since(start)
	sink.Store(float32(m[0]))
	return el, nil
}
