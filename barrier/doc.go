// Package barrier is ringactor's cross-device barrier: a flag array that
// goroutines, the host and persistent kernels on several GPUs share, built
// like the link queue (package p2pqueue) from stores and loads only.
//
// # The flag array
//
// A barrier of N participants is a header (magic, version, N) followed by
// N generation words, each a little-endian u64 alone on its own 128-byte
// line (LineSize), so no two writers share a line and each word has exactly
// one writer: its participant. Arriving at generation g is a store-release
// of g into your own word; waiting for g is load-acquires of every word
// until all are >= g. A participant's generations strictly increase, so a
// word seen at g stays there and the wait reads it no more.
//
// No read-modify-write is ever used. The words may sit in one GPU's memory
// written by peers, or in mapped pinned host memory written across PCIe,
// where atomics are not atomic on many platforms; stores and loads with
// release/acquire order work on every GPU and the host alike, exactly as
// the link queue's indices do (docs/ARCHITECTURE.md §2). The price is that
// claiming an index is local: Flags.Participant refuses a second claim in
// this process, and agents elsewhere must be given distinct indices.
//
// Init writes a barrier into a host-visible p2pqueue.Region (tests and the
// sim backend use p2pqueue.NewAlignedRegion; GPUs, mapped pinned memory);
// Image gives the same bytes for device memory the host cannot map. Attach
// validates the header and the region's size, and returns an error for
// anything else: it never trusts memory contents and never panics on them.
//
// # Host side
//
// Participant.Arrive stores a generation; Participant.Wait (and
// Flags.Wait, for an observer that does not take part) spins briefly,
// yields, then sleeps with exponential backoff up to 200 µs, and returns
// when all have arrived or its context ends. A wait that times out returns
// a *TimeoutError naming the participants still missing (by index, and by
// name when the barrier was given WithNames); it matches both ErrTimeout
// and context.DeadlineExceeded. Participant.ArriveAndWait is one phase with
// the participant's own generation counter. Missing and Generation read
// the array without waiting. The memory-order rule is the one of package
// internal/order, shared with the link queue and the control block.
//
// # Device side
//
// ringactor.cuh (package kernels) holds ra_barrier_word, ra_barrier_check,
// ra_barrier_arrive and ra_barrier_poll, built on its .sys-scope
// ra_store_release_sys / ra_load_acquire_sys (volatile accesses fenced with
// __threadfence_system before sm_70), and its layout #defines (RA_BAR_*)
// are generated from this package's constants into ringactor_layout.h, so
// Go and CUDA cannot disagree. Ring kernels use them for CmdBarrier
// (ringkernel.Kernel.ArriveAt): a kernel arrives once it has taken the
// messages before a mark in its stream and waits in its loop, polling the
// array each round, beating and reading commands. CUDAHeader (include name
// CUDAHeaderName) adds ra_barrier_wait and ra_barrier_sync_block for
// kernels of your own: one thread per block does the loads and sleeps with
// __nanosleep between rounds; the block brackets it with __syncthreads.
// The wait also reads a stop flag so that a stopped kernel never hangs in
// it.
//
// The actor-level protocol (Arrive and Release messages to a barrier actor)
// is in package runtime/collective (NewBarrier), on the runtime's actor
// system; a collective barrier with ring kernels among its participants
// (BarrierSpec.Stages) is a flag array of this package.
package barrier
