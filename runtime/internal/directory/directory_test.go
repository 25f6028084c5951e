package directory

import (
	"errors"
	"sync"
	"testing"
)

type pipe struct{ name string }

func TestNamesClaimBuildRelease(t *testing.T) {
	var d Directory[pipe, string]
	if err := d.Claim("a"); err != nil {
		t.Fatal(err)
	}
	if err := d.Claim("a"); !errors.Is(err, ErrNameTaken) {
		t.Fatalf("second claim while building: %v, want ErrNameTaken", err)
	}
	if got := d.Open(); len(got) != 0 {
		t.Fatalf("a pipeline being built is listed: %v", got)
	}
	a := &pipe{"a"}
	if err := d.Built("a", a); err != nil {
		t.Fatal(err)
	}
	if got := d.Open(); len(got) != 1 || got[0] != a {
		t.Fatalf("open: %v, want [a]", got)
	}
	if err := d.Claim("a"); !errors.Is(err, ErrNameTaken) {
		t.Fatalf("claim of a built name: %v, want ErrNameTaken", err)
	}
	d.Release("a")
	if got := d.Open(); len(got) != 0 {
		t.Fatalf("released pipeline still listed: %v", got)
	}
	if err := d.Claim("a"); err != nil {
		t.Fatalf("claim after release: %v", err)
	}
}

// A pipeline finishing its build after Close is refused, so Close's list
// of open pipelines misses none.
func TestBuiltAfterCloseIsRefused(t *testing.T) {
	var d Directory[pipe, string]
	d.Claim("a")
	d.Claim("b")
	d.Built("a", &pipe{"a"})
	if open := d.Close(); len(open) != 1 || open[0].name != "a" {
		t.Fatalf("Close: %v, want [a]", open)
	}
	if err := d.Built("b", &pipe{"b"}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Built after Close: %v, want ErrClosed", err)
	}
}

func TestRolesAreClaimedOnce(t *testing.T) {
	var d Directory[pipe, int]
	var wg sync.WaitGroup
	var mu sync.Mutex
	var won []func()
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if release, ok := d.ClaimRole(1); ok {
				mu.Lock()
				won = append(won, release)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(won) != 1 {
		t.Fatalf("%d claims of one role won, want 1", len(won))
	}
	if _, ok := d.ClaimRole(2); !ok {
		t.Fatal("another role is free")
	}
	won[0]()
	if _, ok := d.ClaimRole(1); !ok {
		t.Fatal("a released role is free again")
	}
}
