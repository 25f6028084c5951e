package ringkernel

// The argument block of a device ring kernel (struct ra_ring_args in
// kernels/cuda/ringactor.cuh), passed by value at launch. These constants
// are its one definition: genlayout writes them into the layout header and
// the CUDA source static_asserts its struct against them.
const (
	// MaxDeviceStealLinks is how many steal links (Spec.StealTo) a device
	// loop forwards stolen work into: one to each other instance of a stage
	// group, whose instances each read at most MaxDeviceInLinks in-links.
	MaxDeviceStealLinks = MaxDeviceInLinks - 1
	// MaxDeviceInLinks is how many in-links a device loop reads, in turn: a
	// stage's host ingress, its upstream link, and the rest for fan-in
	// (several stages feeding one, each over its own link) and stolen work.
	// The in-links' scope bits are one u32 (ArgOffInSys), so at most 32.
	MaxDeviceInLinks = 16
	// DeviceBatch is the most messages a device loop takes in one step
	// (RA_BATCH): a sink stage's result buffer holds one batch.
	DeviceBatch = 128

	ArgOffCtrl      = 0                                   // u64: control block (mapped pinned)
	ArgOffIn        = 8                                   // u64[MaxDeviceInLinks]: in-link regions
	ArgOffOut       = ArgOffIn + 8*MaxDeviceInLinks       // u64[MaxDeviceOutLinks]: out-link regions
	ArgOffTrace     = ArgOffOut + 8*MaxDeviceOutLinks     // u64: trace ring (mapped pinned)
	ArgOffParams    = ArgOffTrace + 8                     // u64: const float* params
	ArgOffState     = ArgOffParams + 8                    // u64: float* state of a stateful stage
	ArgOffSink      = ArgOffState + 8                     // u64: float* results of a sink
	ArgOffNumIn     = ArgOffSink + 8                      // u32: in-links used
	ArgOffInSys     = ArgOffNumIn + 4                     // u32: bit i set: in-link i's producer is the host or a peer GPU
	ArgOffOutSys    = ArgOffInSys + 4                     // u32: bit i set: out-link i's consumer is the host or a peer GPU
	ArgOffNumOut    = ArgOffOutSys + 4                    // u32: out-links used, 0 for a sink
	ArgOffRoute     = ArgOffNumOut + 4                    // u32: Route
	ArgOffKeyOffset = ArgOffRoute + 4                     // u32: RouteKey's key offset in the result
	ArgOffSteal     = ArgOffKeyOffset + 4                 // u64[MaxDeviceStealLinks]: steal-link regions (Spec.StealTo)
	ArgOffNumSteal  = ArgOffSteal + 8*MaxDeviceStealLinks // u32: steal links used
	ArgOffStealSys  = ArgOffNumSteal + 4                  // u32: bit i set: steal link i's consumer is the host or a peer GPU
	ArgOffBuf       = ArgOffStealSys + 4                  // u64[MaxStageBuffers]: bound buffers' addresses (Stage.Buffers)
	ArgOffBufSize   = ArgOffBuf + 8*MaxStageBuffers       // u64[MaxStageBuffers]: their sizes in bytes
	ArgOffNumBuf    = ArgOffBufSize + 8*MaxStageBuffers   // u32: bound buffers
	ArgOffInLL      = ArgOffNumBuf + 4                    // u32: bit i set: in-link i is flagged (p2pqueue.FormatFlagged)
	ArgOffOutLL     = ArgOffInLL + 4                      // u32: bit i set: out-link i is flagged (p2pqueue.FormatFlagged)
	ArgOffVariant   = ArgOffOutLL + 4                     // u32: Spec.Variant, the device loop
	ArgOffPhase     = ArgOffVariant + 4                   // u64: per-phase timers (Spec.PhaseTimers), 0 = off
	ArgSize         = ArgOffPhase + 8                     // bytes, a multiple of 8
)

// LoopVariant is a device loop, picked at launch (Spec.Variant, ArgOffVariant; ARCHITECTURE §4.1).
type LoopVariant uint32

// LoopClassic is the block loop (the default); LoopWarp the experimental warp hot path, LoopWarpPrefetch it with a pipelined ingress (ra_warp.cuh).
const LoopClassic, LoopWarp, LoopWarpPrefetch LoopVariant = 0, 1, 2

var _ [0]struct{} = [ArgSize % 8]struct{}{} // the block is read as u64 words: a whole number of them
