package ext_test

import (
	"context"
	"errors"
	"io"
	"testing"

	"github.com/ringactor/ringactor/internal/rttest"
	"github.com/ringactor/ringactor/p2pqueue"
	ra "github.com/ringactor/ringactor/runtime"
	"github.com/ringactor/ringactor/runtime/internal/ext"
	"github.com/ringactor/ringactor/runtime/internal/extid"
)

func TestMain(m *testing.M) { rttest.Main(m) }

// A real runtime's extension is a Host: Of's assertion panics, and this
// test fails, once runtime's hooks drift from the interface.
func TestOfARuntimeIsItsHost(t *testing.T) {
	rt := rttest.New(t, ra.DeviceOptions{Backend: "sim", SimDevices: 2, Log: io.Discard}).RT
	h := ext.Of(rt)
	base := h.LiveLinks()
	l, _, err := h.NewLink(0, 1, 8, 64, ra.NewLinkID(h.NewLinkOwner(), ra.LinkSteal, 0, 1))
	if err != nil {
		t.Fatal(err)
	}
	if n := h.LiveLinks(); n != base+1 {
		t.Fatalf("%d live links after NewLink, %d before", n, base)
	}
	if err := h.FreeLink(l); err != nil {
		t.Fatal(err)
	}
	if err := h.FreeLink(l); !errors.Is(err, extid.ErrNotALink) {
		t.Fatalf("second FreeLink: %v, want ErrNotALink", err)
	}
	release, ok := h.Claim(extid.ClusterNode)
	if !ok {
		t.Fatal("first claim refused")
	}
	if _, again := ext.Of(rt).Claim(extid.ClusterNode); again {
		t.Fatal("a claimed role was claimed again")
	}
	release()
	if release, ok := h.Claim(extid.ClusterNode); !ok {
		t.Fatal("a released role was refused")
	} else {
		release()
	}
	slots := h.WithSlots(ra.Sink{}, func(context.Context, []p2pqueue.Header, [][]byte) {})
	if err := h.CheckResults(slots); err == nil {
		t.Fatal("CheckResults took a slots sink")
	}
	if err := h.CheckResults(ra.Sink{Func: func(ra.Result) {}}); err != nil {
		t.Fatalf("CheckResults refused a Func sink: %v", err)
	}
}

// Runtimes that share one actor system (Config.System) share its one
// extension, and each gets its own hooks from it.
func TestRuntimesSharingASystemHaveTheirOwnHosts(t *testing.T) {
	a := rttest.New(t, ra.DeviceOptions{Backend: "sim", SimDevices: 2, Log: io.Discard}).RT
	b, err := ra.New(ra.Config{Devices: ra.DeviceOptions{Backend: "sim", SimDevices: 2, Log: io.Discard}, System: a.System()})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	release, ok := ext.Of(a).Claim(extid.ClusterNode)
	if !ok {
		t.Fatal("a's claim refused")
	}
	defer release()
	releaseB, ok := ext.Of(b).Claim(extid.ClusterNode)
	if !ok {
		t.Fatal("b's claim refused: its host is a's")
	}
	releaseB()
	l, _, err := ext.Of(b).NewLink(0, 1, 8, 64, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := ext.Of(a).FreeLink(l); !errors.Is(err, extid.ErrNotALink) {
		t.Fatalf("a freed b's link: %v", err)
	}
	if err := ext.Of(b).FreeLink(l); err != nil {
		t.Fatal(err)
	}
}
