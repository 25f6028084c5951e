// Package version says which ringactor this is: the release the source
// declares and, where the binary's build info has them, the commit it was
// built from and the Go that built it. The commands print it
// (`ringactor version`, `-version`), and the tracer and meter name it as
// their instrumentation version.
//
// ringactor is at v0 (see CHANGELOG.md): until v1, a minor release may
// change the public API; every such change is listed in the changelog with
// what a user must change, and where it can, the old form keeps working for
// one release, marked Deprecated.
package version

import (
	"fmt"
	"runtime/debug"
)

// Version is the release this source is, in semantic-version form without
// the leading "v". A tree between releases carries the next one's number
// with "-dev".
const Version = "0.1.0"

// Info is what a binary knows of its build.
type Info struct {
	Version  string // Version, or the module version the binary was built at when it is a tagged one
	Commit   string // VCS revision, "" when the build info has none
	Modified bool   // the work tree had changes the commit lacks
	Go       string // the Go that built the binary
}

// Read returns the build's Info. It never fails: what the build info lacks
// is left empty.
func Read() Info {
	in := Info{Version: Version}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return in
	}
	in.Go = bi.GoVersion
	if v := bi.Main.Version; v != "" && v != "(devel)" && v[0] == 'v' {
		// Built as a dependency or with go install module@version: the
		// module's version is what it is.
		in.Version = v[1:]
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			in.Commit = s.Value
		case "vcs.modified":
			in.Modified = s.Value == "true"
		}
	}
	return in
}

// String is one line: "0.1.0 (commit 1a2b3c4d5e6f, modified, go1.26.8)".
func (in Info) String() string {
	s := in.Version
	var extra []any
	format := ""
	if in.Commit != "" {
		c := in.Commit
		if len(c) > 12 {
			c = c[:12]
		}
		format += ", commit %s"
		extra = append(extra, c)
		if in.Modified {
			format += ", modified"
		}
	}
	if in.Go != "" {
		format += ", %s"
		extra = append(extra, in.Go)
	}
	if format == "" {
		return s
	}
	return s + " (" + fmt.Sprintf(format[2:], extra...) + ")"
}
