package sim_test

import (
	"strings"
	"testing"

	rk "github.com/ringactor/ringactor/ringkernel"
	"github.com/ringactor/ringactor/ringkernel/sim"
)

func TestParseTopology(t *testing.T) {
	conn, p2p, err := sim.ParseTopology("0-1:nv4, 2-3:NV2,1-2, *:node", 5)
	if err != nil {
		t.Fatal(err)
	}
	var rows []string
	for i := range conn {
		var cells []string
		for j := range conn[i] {
			cell := conn[i][j].String()
			if p2p[i][j] {
				cell += "+"
			}
			cells = append(cells, cell)
		}
		rows = append(rows, strings.Join(cells, " "))
	}
	want := []string{
		"X NV4+ NODE NODE NODE",
		"NV4+ X PIX+ NODE NODE",
		"NODE PIX+ X NV2+ NODE",
		"NODE NODE NV2+ X NODE",
		"NODE NODE NODE NODE X",
	}
	if strings.Join(rows, "\n") != strings.Join(want, "\n") {
		t.Fatalf("topology:\n%s\nwant:\n%s", strings.Join(rows, "\n"), strings.Join(want, "\n"))
	}
	for s, cell := range map[string]string{"": "PIX", "all": "PIX", "none": "SYS", "0-1": "SYS", "*:pxb": "PXB"} {
		conn, p2p, err := sim.ParseTopology(s, 3)
		if err != nil || conn[0][2].String() != cell || p2p[0][2] != conn[0][2].Peerable() || conn[1][1].Level != rk.LevelSelf {
			t.Errorf("%q: 0→2 is %v (peer %v), %v; want %s", s, conn[0][2], p2p[0][2], err, cell)
		}
	}
	for _, bad := range []string{"0-0", "0-9", "x", "1-", "0-1:nv0", "0-1:fast", "*", "*:x", "0-1:?"} {
		if _, _, err := sim.ParseTopology(bad, 4); err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("%q accepted, or the error does not quote it: %v", bad, err)
		}
	}
}
