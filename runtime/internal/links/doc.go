// Package links is the life of a link's memory: where a link lives
// (p2pqueue.Place from the devices' topology), allocating it from its
// device's backend and formatting it, the users it was given to, and
// giving it back. A link's memory comes from its device's backend (on
// CUDA a fixed arena per device), so a service that builds pipelines for
// months must give every link back.
//
// A Ledger makes and frees links and tracks which ring kernels each was
// given (Uses). Free gives a link back once every one of them has ended:
// at once after a clean close; for a kernel the host cut off or abandoned
// (a stage function that has not returned, a GPU loop that did not stop),
// only when its loop ends, since it may still read or write the link.
// Make makes a pipeline's links from its graph (each stage's ingress, a
// link per edge, an exit's egress) and gives back all it took when one
// fails; Set.Kernel says which of them a stage's kernel reads and writes.
// Check refuses a stage's slot size and capacity, and a link too big for
// the memory that would hold it, before anything is made.
//
// A link belongs to whoever made it: a pipeline frees its own when it
// closes (FreeSet), a stage group its steal links (ext.Host's FreeLink).
// A pipeline's Path (runtime.DataPath) gives the format of every link
// Make makes for it; New makes indexed links.
//
// It takes plain inputs (device ids, sizes, next-lists, owner numbers)
// and the backend's Alloc and Free (Memory); it knows no actors, no
// telemetry and no runtime types. Its error texts are the ones runtime's
// Build and the sub-packages' NewLink and FreeLink return.
package links
