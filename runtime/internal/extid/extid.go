package extid

import (
	"errors"
	"sync"

	"github.com/asynkron/protoactor-go/extensions"
)

// ID is runtime's extension on the actor system (system.Extensions), as
// protoactor's remote and cluster register theirs: New registers it, and
// runtime/internal/ext's Of looks it up.
var ID = extensions.NextExtensionID()

// Role is what one user of a runtime takes for itself (ext.Host.Claim):
// while it holds the role, a second claim of it is refused.
type Role uint8

// The roles. The zero Role is none.
const (
	// ClusterNode is runtime/cluster's Join: a runtime's actor system is
	// configured as a cluster member once.
	ClusterNode Role = iota + 1
)

// ErrNotALink: a link given back (ext.Host.FreeLink) that the runtime did
// not make, or one already given back.
var ErrNotALink = errors.New("ringactor: not a live link of this runtime")

// registerMu orders the one Register of each actor system before any
// lookup: Extensions is a plain slice.
var registerMu sync.Mutex

// Register registers e, runtime's extension, in an actor system's
// extensions (its Extensions) under ID once.
func Register(set *extensions.Extensions, e extensions.Extension) {
	registerMu.Lock()
	defer registerMu.Unlock()
	if set.Get(ID) == nil {
		set.Register(e)
	}
}
