package p2pqueue

import "fmt"

// Host is the endpoint id of the host, as a link's producer (ingress) or
// consumer (egress).
const Host = -1

// LinkKind is how a link's memory is placed between its two ends.
type LinkKind uint8

const (
	// LinkLocal joins two stages on one device: the consumer's device memory.
	LinkLocal LinkKind = 1 + iota
	// LinkPeer joins two devices with peer access: the consumer's device
	// memory, written by the producer through the peer mapping.
	LinkPeer
	// LinkStaged joins two devices without peer access: portable pinned host
	// memory mapped into both (host-staged, still no host thread).
	LinkStaged
	// LinkIngress carries messages from the host to a device: mapped pinned
	// host memory the host writes and the device reads.
	LinkIngress
	// LinkEgress carries messages from a device to the host: mapped pinned
	// host memory the device writes and the host reads.
	LinkEgress
)

func (k LinkKind) String() string {
	switch k {
	case LinkLocal:
		return "local"
	case LinkPeer:
		return "peer"
	case LinkStaged:
		return "staged"
	case LinkIngress:
		return "ingress"
	case LinkEgress:
		return "egress"
	}
	return fmt.Sprintf("LinkKind(%d)", uint8(k))
}

// Placement is where a link's queue lives.
type Placement struct {
	Kind LinkKind
	// Memory is the kind of memory to allocate, on Device.
	Memory MemoryKind
	// Device is the device whose memory (or whose mapping of host memory)
	// holds the queue: the consumer's, or the producer's for egress.
	Device int
}

func (p Placement) String() string {
	return fmt.Sprintf("%s (%s memory on device %d)", p.Kind, p.Memory, p.Device)
}

// Topology is what placement needs to know of the devices a link joins.
type Topology interface {
	// Peer reports whether device a can write device b's memory.
	Peer(a, b int) bool
	// CPU reports whether device d is the host's CPU run as a device: its
	// memory is host memory, so a GPU reaches it only through mapped
	// pinned memory.
	CPU(d int) bool
}

// PeerFunc is a Topology of GPUs only, whose peer access f reports.
type PeerFunc func(a, b int) bool

// Peer calls f; a nil PeerFunc has no peer pairs.
func (f PeerFunc) Peer(a, b int) bool { return f != nil && f(a, b) }

// CPU is false: a PeerFunc knows only GPUs.
func (PeerFunc) CPU(int) bool { return false }

// Place chooses a link's placement from its ends (device ids, or Host) and
// the topology (nil: GPUs without peer access). It is the one place the
// kind of a link is decided (docs/ARCHITECTURE.md §7): the queue lives with
// its consumer wherever the producer can reach it, because each consumer
// poll is then a local read and each publish one remote write.
//
// The CPU device is host memory, so a link from it to a GPU is placed as
// the host's ingress (mapped pinned memory of the GPU), a link from a GPU
// to it as egress (mapped pinned memory the GPU writes), and a link within
// it, or from the host to it, in host memory.
func Place(producer, consumer int, t Topology) (Placement, error) {
	if t == nil {
		t = PeerFunc(nil)
	}
	cpu := func(d int) bool { return d != Host && t.CPU(d) }
	switch {
	case producer == Host && consumer == Host:
		return Placement{}, fmt.Errorf("p2pqueue: a link from the host to the host is a channel; give one end a device")
	case producer < Host || consumer < Host:
		return Placement{}, fmt.Errorf("p2pqueue: no device %d", min(producer, consumer))
	case cpu(consumer) && (producer == Host || cpu(producer)):
		kind := LinkLocal
		if producer == Host {
			kind = LinkIngress
		}
		return Placement{Kind: kind, Memory: HostMemory, Device: consumer}, nil
	case cpu(producer) && consumer == Host:
		return Placement{Kind: LinkEgress, Memory: HostMemory, Device: producer}, nil
	case producer == Host || cpu(producer):
		return Placement{Kind: LinkIngress, Memory: MappedPinnedMemory, Device: consumer}, nil
	case consumer == Host || cpu(consumer):
		return Placement{Kind: LinkEgress, Memory: MappedPinnedMemory, Device: producer}, nil
	}
	switch PathOf(producer, consumer, t) {
	case PathLocal:
		return Placement{Kind: LinkLocal, Memory: DeviceMemory, Device: consumer}, nil
	case PathPeer:
		return Placement{Kind: LinkPeer, Memory: DeviceMemory, Device: consumer}, nil
	}
	return Placement{Kind: LinkStaged, Memory: PortablePinnedMemory, Device: consumer}, nil
}

// Path is how bytes get from one device's memory to another's.
type Path uint8

const (
	// PathLocal: both ends are one device.
	PathLocal Path = 1 + iota
	// PathPeer: two GPUs, and the first can write the second's memory
	// (a peer copy, a peer link).
	PathPeer
	// PathStaged: two GPUs without peer access: through pinned host
	// memory (a copy out and a copy in, a link in portable memory).
	PathStaged
	// PathHost: one end is host memory (the host, or the CPU device):
	// a copy to or from the host.
	PathHost
)

func (p Path) String() string {
	switch p {
	case PathLocal:
		return "local"
	case PathPeer:
		return "peer"
	case PathStaged:
		return "staged"
	case PathHost:
		return "host"
	}
	return fmt.Sprintf("Path(%d)", uint8(p))
}

// PathOf decides how from reaches to's memory (device ids, or Host) given
// the topology (nil: GPUs without peer access). It is the one place the
// peer-or-staged decision is made: Place uses it for links between two
// GPUs, and the backends' buffer copies (ringkernel/devmem) for copies.
func PathOf(from, to int, t Topology) Path {
	if t == nil {
		t = PeerFunc(nil)
	}
	switch {
	case from == Host || to == Host || t.CPU(from) || t.CPU(to):
		if from == to {
			return PathLocal
		}
		return PathHost
	case from == to:
		return PathLocal
	case t.Peer(from, to):
		return PathPeer
	}
	return PathStaged
}
