package version

import (
	"regexp"
	"strings"
	"testing"
)

func TestVersionIsSemver(t *testing.T) {
	if !regexp.MustCompile(`^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$`).MatchString(Version) {
		t.Fatalf("Version %q is not a semantic version without the v", Version)
	}
}

func TestInfoString(t *testing.T) {
	for _, c := range []struct {
		in   Info
		want string
	}{
		{Info{Version: "0.1.0"}, "0.1.0"},
		{Info{Version: "0.1.0", Go: "go1.26.8"}, "0.1.0 (go1.26.8)"},
		{Info{Version: "0.1.0", Commit: "0123456789abcdef", Modified: true, Go: "go1.26.8"}, "0.1.0 (commit 0123456789ab, modified, go1.26.8)"},
		{Info{Version: "0.1.0", Commit: "abc"}, "0.1.0 (commit abc)"},
	} {
		if got := c.in.String(); got != c.want {
			t.Errorf("%+v: %q, want %q", c.in, got, c.want)
		}
	}
}

func TestReadNamesTheGoThatBuiltTheTest(t *testing.T) {
	in := Read()
	if in.Version == "" || !strings.HasPrefix(in.Go, "go") {
		t.Fatalf("Read() = %+v: want a version and the Go version from the build info", in)
	}
}
