// Package naming holds the one rule for the names users give to what
// runtime and its sub-packages build: pipelines, stages, stage groups,
// collectives. A name becomes part of actor names ("<pipeline>/<stage>",
// "group/<name>") and of metric and span attributes, so it is not empty
// and holds no space and no slash.
package naming

import (
	"fmt"
	"strings"
)

// Check returns nil when name follows the rule, and also holds none of the
// characters in more (a cluster pipeline's name also becomes part of its
// grains' identities, "<name>@<address>#<segment>.<generation>", so it
// refuses '@' and '#'); else an error that says how to fix it, naming what
// the name is for ("pipeline", "stage", "group", "collective").
func Check(what, name, more string) error {
	if name != "" && !strings.ContainsAny(name, "/ "+more) {
		return nil
	}
	without := "spaces or slashes"
	if more != "" {
		quoted := make([]string, 0, len(more))
		for _, r := range more {
			quoted = append(quoted, fmt.Sprintf("%q", r))
		}
		without = "spaces, '/', " + strings.Join(quoted, ", ")
	}
	return fmt.Errorf("name %q: give the %s a name without %s", name, what, without)
}
