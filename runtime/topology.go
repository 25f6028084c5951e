package runtime

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Level is how directly two devices are connected, in the terms of
// nvidia-smi topo -m, fastest first.
type Level uint8

const (
	// LevelSelf is a device and itself ("X").
	LevelSelf Level = iota
	// LevelNVLink is a bonded set of NVLinks ("NV#", # the link count).
	LevelNVLink
	// LevelPIX: at most a single PCIe bridge between them.
	LevelPIX
	// LevelPXB: several PCIe bridges, no host bridge.
	LevelPXB
	// LevelPHB: through a PCIe host bridge (the CPU). Also how a GPU
	// reaches the CPU device's memory.
	LevelPHB
	// LevelNODE: across PCIe host bridges within one NUMA node.
	LevelNODE
	// LevelSYS: across NUMA nodes (the SMP interconnect).
	LevelSYS
	// LevelUnknown: nothing said how (no NVML on a machine with GPUs).
	LevelUnknown
)

var levelNames = [...]string{"X", "NV", "PIX", "PXB", "PHB", "NODE", "SYS", "?"}

// Connection is how one device reaches another.
type Connection struct {
	Level Level
	// NVLinks is the number of NVLinks joining them, at LevelNVLink.
	NVLinks int
}

// String is the nvidia-smi topo -m cell: X, NV4, PIX, PXB, PHB, NODE, SYS,
// or ? where it is not known.
func (c Connection) String() string {
	if c.Level == LevelNVLink {
		return fmt.Sprintf("NV%d", c.NVLinks)
	}
	if int(c.Level) < len(levelNames) {
		return levelNames[c.Level]
	}
	return fmt.Sprintf("Level(%d)", c.Level)
}

// MarshalText writes the cell, so JSON shows "NV4".
func (c Connection) MarshalText() ([]byte, error) { return []byte(c.String()), nil }

// UnmarshalText reads a cell (case does not matter).
func (c *Connection) UnmarshalText(b []byte) error {
	v, err := ParseConnection(string(b))
	if err == nil {
		*c = v
	}
	return err
}

// ParseConnection reads a cell: X, NV<n>, PIX, PXB, PHB, NODE, SYS or ?.
func ParseConnection(s string) (Connection, error) {
	u := strings.ToUpper(strings.TrimSpace(s))
	if rest, ok := strings.CutPrefix(u, "NV"); ok && rest != "" {
		n, err := strconv.Atoi(rest)
		if err != nil || n < 1 || n > 64 {
			return Connection{}, fmt.Errorf("%w: link kind %q: NV takes a link count from 1 to 64, as in nv4", ErrNoDevice, s)
		}
		return Connection{Level: LevelNVLink, NVLinks: n}, nil
	}
	for l, name := range levelNames {
		if u == name && Level(l) != LevelNVLink {
			return Connection{Level: Level(l)}, nil
		}
	}
	return Connection{}, fmt.Errorf("%w: link kind %q; want nv<links> (nv4), pix, pxb, phb, node or sys", ErrNoDevice, s)
}

// Faster reports whether c is a faster way between two devices than d:
// more NVLinks, else NVLink over PCIe, else the nearer PCIe level.
func (c Connection) Faster(d Connection) bool {
	if c.Level != d.Level {
		return c.Level < d.Level
	}
	return c.NVLinks > d.NVLinks
}

// Peerable reports whether a connection of this kind usually carries peer
// access: NVLink, or PCIe below a host bridge. Simulated topologies derive
// P2P from it; real GPUs say for themselves.
func (c Connection) Peerable() bool {
	return c.Level == LevelNVLink || c.Level == LevelPIX || c.Level == LevelPXB
}

// Connection says how device a reaches device b (LevelUnknown for ids not
// in the registry).
func (r *Registry) Connection(a, b int) Connection {
	if a < 0 || a >= len(r.devices) || b < 0 || b >= len(r.devices) {
		return Connection{Level: LevelUnknown}
	}
	if a == b {
		return Connection{Level: LevelSelf}
	}
	if r.CPU(a) || r.CPU(b) {
		return Connection{Level: LevelPHB}
	}
	if t := r.devices[a].Topology; b < len(t) {
		return t[b]
	}
	return Connection{Level: LevelUnknown}
}

// parseTopology reads a simulated topology for n devices:
//
//	"all" (or empty)  every pair peers over PCIe (PIX)
//	"none"            no pair peers (SYS)
//	"0-1:nv4,2-3,*:sys"  pairs with a link kind (nv<links>, pix, pxb, phb,
//	                  node, sys; a bare pair is pix); "*:kind" for every
//	                  pair not named (default sys)
//
// It returns each pair's connection and whether it has peer access
// (Connection.Peerable).
func parseTopology(s string, n int) ([][]Connection, [][]bool, error) {
	conn := make([][]Connection, n)
	p2p := make([][]bool, n)
	set := make([][]bool, n)
	for i := range conn {
		conn[i], p2p[i], set[i] = make([]Connection, n), make([]bool, n), make([]bool, n)
	}
	rest := Connection{Level: LevelSYS}
	switch strings.TrimSpace(s) {
	case "", "all":
		rest = Connection{Level: LevelPIX}
		s = ""
	case "none":
		s = ""
	}
	bad := func(item, why string) error {
		return fmt.Errorf("%w: simulated topology %q: %q %s (write e.g. 0-1:nv4,2-3,*:sys, all or none)", ErrNoDevice, s, item, why)
	}
	for item := range strings.SplitSeq(s, ",") {
		if s == "" {
			break
		}
		item = strings.TrimSpace(item)
		pair, kind, hasKind := strings.Cut(item, ":")
		c := Connection{Level: LevelPIX}
		if hasKind {
			var err error
			if c, err = ParseConnection(kind); err != nil || c.Level == LevelSelf || c.Level == LevelUnknown {
				return nil, nil, bad(item, "names no link kind")
			}
		}
		if pair == "*" {
			if !hasKind {
				return nil, nil, bad(item, "needs a kind, as in *:sys")
			}
			rest = c
			continue
		}
		a, b, ok := strings.Cut(pair, "-")
		i, err1 := strconv.Atoi(a)
		j, err2 := strconv.Atoi(b)
		if !ok || err1 != nil || err2 != nil || i < 0 || j < 0 || i >= n || j >= n || i == j {
			return nil, nil, bad(item, fmt.Sprintf("is not a pair of distinct device ids below %d", n))
		}
		conn[i][j], conn[j][i] = c, c
		set[i][j], set[j][i] = true, true
	}
	for i := range conn {
		for j := range conn[i] {
			switch {
			case i == j:
				conn[i][j] = Connection{Level: LevelSelf}
			case !set[i][j]:
				conn[i][j] = rest
			}
			p2p[i][j] = i != j && conn[i][j].Peerable()
		}
	}
	return conn, p2p, nil
}

// rank orders connections, fastest (lowest) first.
func (c Connection) rank() int { return int(c.Level)*100 - c.NVLinks }

// Chain picks GPUs for n consecutive stages (a pipeline's stage i sends to
// stage i+1), preferring the fastest link between each stage and the
// next: distinct GPUs joined by NVLink where there is some, then PCIe
// switches, then host bridges, and so on. Of the chains its greedy walk
// finds from each start, it takes the one whose slowest link is fastest
// (then the next slowest, then the lowest ids). With fewer GPUs than
// stages the chain starts over on the same GPUs, so one GPU takes every
// stage. The CPU is never picked: place stages there by name.
func (r *Registry) Chain(n int) ([]int, error) {
	gpus := len(r.devices) - 1
	switch {
	case n < 1:
		return nil, fmt.Errorf("%w: a chain of %d stages; ask for at least one", ErrNoDevice, n)
	case len(r.devices) == 0:
		return nil, fmt.Errorf("%w: %s", ErrNoDevice, r.idsText())
	case gpus == 0:
		return nil, fmt.Errorf("%w: no GPUs to chain stages over; place them on the CPU, device %d", ErrNoDevice, r.CPUDevice().ID)
	}
	k := min(n, gpus)
	var best []int
	var bestCost []int
	for start := range gpus {
		path := []int{start}
		used := map[int]bool{start: true}
		var cost []int
		for len(path) < k {
			from, next := path[len(path)-1], -1
			for j := range gpus {
				if !used[j] && (next < 0 || r.Connection(from, j).rank() < r.Connection(from, next).rank()) {
					next = j
				}
			}
			path = append(path, next)
			used[next] = true
			cost = append(cost, r.Connection(from, next).rank())
		}
		slices.SortFunc(cost, func(a, b int) int { return b - a }) // slowest first
		if best == nil || slices.Compare(cost, bestCost) < 0 {
			best, bestCost = path, cost
		}
	}
	out := make([]int, n)
	for i := range out {
		out[i] = best[i%k]
	}
	return out, nil
}

// DeviceList reads a list of devices for n stages as command lines give
// it: "auto" (Chain(n)), one device for all of them ("2", "cpu"), or one
// per stage ("0,cpu,2"), each an id or "cpu". A name that is no device is
// reported (with the ids there are) before a list of the wrong length.
func (r *Registry) DeviceList(s string, n int) ([]int, error) {
	s = strings.TrimSpace(s)
	if s == "auto" {
		return r.Chain(n)
	}
	names := strings.Split(s, ",")
	found := make([]int, len(names))
	for i, name := range names {
		d, err := r.Lookup(name)
		if err != nil {
			return nil, err
		}
		found[i] = d.ID
	}
	if len(names) != 1 && len(names) != n {
		return nil, fmt.Errorf("%w: %q names %d devices; give one per stage (%d), one for all, or auto", ErrNoDevice, s, len(names), n)
	}
	ids := make([]int, n)
	for i := range ids {
		ids[i] = found[i%len(found)]
	}
	return ids, nil
}
