package runtime_test

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/ringactor/ringactor/internal/rttest"
	ra "github.com/ringactor/ringactor/runtime"
	"github.com/ringactor/ringactor/runtime/internal/ext"
	"github.com/ringactor/ringactor/runtime/internal/extid"
)

// One link-id scheme: packed and decoded the same way, and printed by
// errors with its owner, stage and role.
func TestLinkIDDecodes(t *testing.T) {
	for _, c := range []struct {
		id   ra.LinkID
		want string
	}{
		{ra.NewLinkID(7, ra.LinkIn, 0, 0), "pipeline 7 stage 0 in"},
		{ra.NewLinkID(7, ra.LinkOut, 1, 2), "pipeline 7 stage 1 out 2"},
		{ra.NewLinkID(1<<32-1, ra.LinkEgress, 16383, 0), "pipeline 4294967295 stage 16383 egress"},
		{ra.NewLinkID(9, ra.LinkSteal, 3, 1), "group 9 steal 3 → 1"},
		{ra.LinkID(258), "link 0x102"},
	} {
		if got := c.id.String(); got != c.want {
			t.Errorf("%#x: %q, want %q", uint64(c.id), got, c.want)
		}
	}
	id := ra.NewLinkID(5, ra.LinkOut, 12, 13)
	if id.Owner() != 5 || id.Role() != ra.LinkOut || id.Stage() != 12 || id.Index() != 13 {
		t.Fatalf("%v: owner %d role %d stage %d index %d", id, id.Owner(), id.Role(), id.Stage(), id.Index())
	}
}

func TestLinkIDInErrorsAndDescribe(t *testing.T) {
	rt := rttest.New(t, ra.DeviceOptions{Backend: "sim", SimDevices: 2, Log: io.Discard}).RT
	host := ext.Of(rt)
	owner := host.NewLinkOwner()
	l, _, err := host.NewLink(0, 1, 8, 64, ra.NewLinkID(owner, ra.LinkSteal, 0, 1))
	if err != nil {
		t.Fatal(err)
	}
	if got := ra.LinkID(l.Config().LinkID); got.Owner() != owner || got.Role() != ra.LinkSteal {
		t.Fatalf("header holds %v", got)
	}
	if err := host.FreeLink(l); err != nil {
		t.Fatal(err)
	}
	err = host.FreeLink(l)
	if !errors.Is(err, extid.ErrNotALink) || !strings.Contains(err.Error(), "steal 0 → 1") {
		t.Fatalf("second FreeLink: %v, want ErrNotALink naming the steal link", err)
	}
	p, err := rt.Build(rttest.Ctx(t), ra.PipelineSpec{Name: "ids", Stages: []ra.StageSpec{{Name: "a", Op: "identity"}, {Name: "b", Op: "identity"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(rttest.Ctx(t), false)
	if p.Number() == 0 || p.Number() == owner || !strings.Contains(p.Describe(), "(number ") {
		t.Fatalf("pipeline number %d (group's %d), Describe:\n%s", p.Number(), owner, p.Describe())
	}
}
