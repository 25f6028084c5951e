// Command testcount reads `go test -json` on stdin and prints, per
// package, how many tests (subtests included) ran, passed, failed and were
// skipped, and each skip's reason: the counts per backend that the
// conformance and runtime-level suites report.
//
//	RINGACTOR_TEST_BACKEND=cpu go test -json ./runtime/... | go run ./internal/testcount
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

type event struct {
	Action, Package, Test, Output string
}

type counts struct{ run, pass, fail, skip int }

func main() {
	if err := count(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "testcount:", err)
		os.Exit(1)
	}
}

func count(r io.Reader, w io.Writer) error {
	per := map[string]*counts{}
	out := map[string][]string{} // package/test: its output lines
	reasons := map[string]int{}  // skip reason: how many tests
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil || e.Test == "" {
			continue // a line that is not an event, or a package's own
		}
		key := e.Package + " " + e.Test
		c := per[e.Package]
		if c == nil {
			c = &counts{}
			per[e.Package] = c
		}
		switch e.Action {
		case "output":
			out[key] = append(out[key], strings.TrimSpace(e.Output))
		case "pass":
			c.run++
			c.pass++
		case "fail":
			c.run++
			c.fail++
		case "skip":
			c.skip++
			reasons[skipReason(out[key])]++
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	pkgs := make([]string, 0, len(per))
	for p := range per {
		pkgs = append(pkgs, p)
	}
	sort.Strings(pkgs)
	var total counts
	fmt.Fprintf(w, "%-55s %5s %6s %6s %7s\n", "package", "run", "passed", "failed", "skipped")
	for _, p := range pkgs {
		c := per[p]
		fmt.Fprintf(w, "%-55s %5d %6d %6d %7d\n", p, c.run, c.pass, c.fail, c.skip)
		total.run, total.pass, total.fail, total.skip = total.run+c.run, total.pass+c.pass, total.fail+c.fail, total.skip+c.skip
	}
	fmt.Fprintf(w, "%-55s %5d %6d %6d %7d\n", "total", total.run, total.pass, total.fail, total.skip)
	if len(reasons) > 0 {
		fmt.Fprintln(w, "skipped, by reason:")
		rs := make([]string, 0, len(reasons))
		for r := range reasons {
			rs = append(rs, r)
		}
		sort.Strings(rs)
		for _, r := range rs {
			fmt.Fprintf(w, "%4d  %s\n", reasons[r], r)
		}
	}
	return nil
}

// skipReason is the message t.Skip printed: the last output line before
// the "--- SKIP" line, without its file:line prefix.
func skipReason(lines []string) string {
	for i := len(lines) - 1; i >= 0; i-- {
		l := lines[i]
		if l == "" || strings.HasPrefix(l, "--- SKIP") || strings.HasPrefix(l, "=== ") {
			continue
		}
		if _, after, ok := strings.Cut(l, ": "); ok && strings.Contains(l[:len(l)-len(after)], ".go:") {
			return after
		}
		return l
	}
	return "(no reason given)"
}
