package p2pqueue

import "testing"

type placeCase struct {
	from, to int
	kind     LinkKind
	mem      MemoryKind
	dev      int
}

func checkPlace(t *testing.T, topo Topology, cases []placeCase) {
	t.Helper()
	for _, c := range cases {
		p, err := Place(c.from, c.to, topo)
		if err != nil || p.Kind != c.kind || p.Memory != c.mem || p.Device != c.dev {
			t.Errorf("%T: Place(%d, %d) = %v, %v; want %s in %s of %d", topo, c.from, c.to, p, err, c.kind, c.mem, c.dev)
		}
	}
}

func TestPlace(t *testing.T) {
	// Devices 0-1 and 2-3 are peer pairs; the pairs cannot reach each other.
	peer := PeerFunc(func(a, b int) bool { return a/2 == b/2 })
	checkPlace(t, peer, []placeCase{
		{Host, 2, LinkIngress, MappedPinnedMemory, 2},
		{3, Host, LinkEgress, MappedPinnedMemory, 3},
		{1, 1, LinkLocal, DeviceMemory, 1},
		{0, 1, LinkPeer, DeviceMemory, 1},
		{3, 2, LinkPeer, DeviceMemory, 2},
		{1, 2, LinkStaged, PortablePinnedMemory, 2},
	})
	if p, _ := Place(0, 1, nil); p.Kind != LinkStaged {
		t.Errorf("no topology: %v, want staged", p)
	}
	// Device 4 is the CPU: links that touch it are host memory, reached by
	// a GPU through its mapping of pinned memory.
	checkPlace(t, cpuTopo{peer, 4}, []placeCase{
		{Host, 4, LinkIngress, HostMemory, 4},
		{4, Host, LinkEgress, HostMemory, 4},
		{4, 4, LinkLocal, HostMemory, 4},
		{4, 1, LinkIngress, MappedPinnedMemory, 1},
		{2, 4, LinkEgress, MappedPinnedMemory, 2},
		{0, 1, LinkPeer, DeviceMemory, 1},
		{1, 2, LinkStaged, PortablePinnedMemory, 2},
	})
	for _, bad := range [][2]int{{Host, Host}, {-2, 0}, {0, -5}} {
		if _, err := Place(bad[0], bad[1], peer); err == nil {
			t.Errorf("Place(%d, %d) accepted", bad[0], bad[1])
		}
	}
}

type cpuTopo struct {
	PeerFunc
	cpu int
}

func (t cpuTopo) CPU(d int) bool { return d == t.cpu }
