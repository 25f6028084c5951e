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

// PathOf is the one peer-or-staged decision, shared by Place (links) and
// buffer copies: every ordered pair of a matrix with both kinds, and the
// CPU's and the host's pairs, and Place agrees with it for every GPU pair.
func TestPathOf(t *testing.T) {
	// 0-1 peer both ways, 1 → 2 one way only, 3 reaches nobody; 4 is the CPU.
	peer := PeerFunc(func(a, b int) bool { return a/2 == b/2 && a < 2 || a == 1 && b == 2 })
	topo := cpuTopo{peer, 4}
	want := map[[2]int]Path{
		{0, 0}: PathLocal, {0, 1}: PathPeer, {1, 0}: PathPeer, {1, 2}: PathPeer, {2, 1}: PathStaged,
		{0, 2}: PathStaged, {2, 3}: PathStaged, {3, 0}: PathStaged, {3, 3}: PathLocal,
		{4, 4}: PathLocal, {0, 4}: PathHost, {4, 3}: PathHost, {Host, 2}: PathHost, {1, Host}: PathHost,
	}
	for pair, w := range want {
		if got := PathOf(pair[0], pair[1], topo); got != w {
			t.Errorf("PathOf(%d, %d) = %v, want %v", pair[0], pair[1], got, w)
		}
	}
	if got := PathOf(0, 1, nil); got != PathStaged {
		t.Errorf("no topology: PathOf(0, 1) = %v, want staged", got)
	}
	kinds := map[Path]LinkKind{PathLocal: LinkLocal, PathPeer: LinkPeer, PathStaged: LinkStaged}
	for a := range 4 {
		for b := range 4 {
			p, err := Place(a, b, topo)
			if err != nil || p.Kind != kinds[PathOf(a, b, topo)] {
				t.Errorf("Place(%d, %d) = %v, %v; PathOf says %v", a, b, p, err, PathOf(a, b, topo))
			}
		}
	}
	if s := PathStaged.String() + Path(9).String(); s != "stagedPath(9)" {
		t.Errorf("strings: %q", s)
	}
}
