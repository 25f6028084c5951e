package naming

import "testing"

func TestCheck(t *testing.T) {
	for _, c := range []struct {
		what, name, more, want string
	}{
		{"pipeline", "main", "", ""},
		{"pipeline", "", "", `name "": give the pipeline a name without spaces or slashes`},
		{"stage", "a b", "", `name "a b": give the stage a name without spaces or slashes`},
		{"group", "a/b", "", `name "a/b": give the group a name without spaces or slashes`},
		{"pipeline", "x@y", "@#", `name "x@y": give the pipeline a name without spaces, '/', '@', '#'`},
		{"pipeline", "x.y-z", "@#", ""},
	} {
		err := Check(c.what, c.name, c.more)
		if got := ""; err != nil {
			got = err.Error()
			if got != c.want {
				t.Errorf("Check(%q, %q, %q) = %q, want %q", c.what, c.name, c.more, got, c.want)
			}
		} else if c.want != "" {
			t.Errorf("Check(%q, %q, %q) = nil, want %q", c.what, c.name, c.more, c.want)
		}
	}
}
