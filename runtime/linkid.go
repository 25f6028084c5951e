package runtime

import (
	"sync/atomic"

	"github.com/ringactor/ringactor/p2pqueue"
)

// LinkID names a link in diagnostics (p2pqueue.LinkID: owner, role, stage,
// index; docs/ARCHITECTURE.md §7). Its String decodes it: "pipeline 7
// stage 1 out 2".
type LinkID = p2pqueue.LinkID

// LinkRole is the role of a link within its owner.
type LinkRole = p2pqueue.LinkRole

// The roles of links (p2pqueue's Role constants).
const (
	LinkIn     = p2pqueue.RoleIn     // the host into a stage: its ingress
	LinkOut    = p2pqueue.RoleOut    // one stage to another: a graph edge
	LinkEgress = p2pqueue.RoleEgress // an exit stage to the host
	LinkSteal  = p2pqueue.RoleSteal  // a stage group's steal link, victim to thief
)

// NewLinkID packs owner, role, stage and index into a LinkID
// (p2pqueue.NewLinkID).
func NewLinkID(owner uint32, role LinkRole, stage, index int) LinkID {
	return p2pqueue.NewLinkID(owner, role, stage, index)
}

// linkOwners numbers the owners of links: every pipeline and stage group
// of every Runtime of the process takes the next (unique in the process,
// so in its Runtime too).
var linkOwners atomic.Uint32

// newLinkOwner returns a new owner number: a pipeline's, or one for the
// links a sub-package makes outside a pipeline (a stage group's steal
// links), so their LinkIDs name that owner apart from every pipeline.
func (rt *Runtime) newLinkOwner() uint32 { return linkOwners.Add(1) }
