// Package p2pqueue is ringactor's link queue: the single-producer,
// single-consumer ring that joins two stages, whichever side of a PCIe or
// NVLink link each runs on.
//
// # Protocol
//
// A link has exactly one producer and one consumer and no read-modify-write
// crosses it: the producer owns tail (slots published), the consumer owns
// head (slots consumed), and each publishes its index with a release store
// and observes the other's with an acquire load. Because no atomic
// read-modify-write is needed, a queue works over any memory both sides can
// load and store: device memory written by a peer GPU, or pinned host memory
// on GPUs without host-native atomics. Fan-in and fan-out are several links.
//
// Each side caches the other's index and re-reads it only when the queue
// looks full (producer) or empty (consumer), since each re-read may be a bus
// round trip. Batches write k slots and publish them with one store of tail
// (Producer.Reserve, Write, Commit) and read k slots and free them with one
// store of head (Consumer.Peek, Read, Release). Close sets a flag after the
// last publish; the consumer reports ErrClosed only once it has drained.
//
// # Layout
//
// The byte layout is fixed by the constants in layout.go (header line,
// producer line, consumer line, then slots of a 32-byte slot header and the
// payload); the CUDA kernels include the same numbers through a generated
// header. A Region is the memory a queue lives in, with its kind (Go memory,
// device memory, mapped or portable pinned host memory). Attach validates a
// region's header and indices and returns an error naming the problem for
// anything it did not expect: queue memory is never trusted, and nothing in
// it makes this package panic.
//
// # Waiting
//
// Enqueue and Dequeue wait with backoff (spin, yield, then sleep) until
// ctx is done. A consumer whose link has a Doorbell parks instead of
// sleeping and the producer rings it only when the consumer said it parked,
// so an idle consumer costs no CPU and a busy link pays one load per batch.
package p2pqueue
