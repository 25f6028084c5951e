package runtime

import (
	"fmt"
	"sync/atomic"
)

// LinkID names a link in diagnostics: it is stored in the link's header
// (p2pqueue.Config.LinkID) and printed by errors, Describe and the tools
// that read a link. One scheme for every link the runtime and its
// sub-packages make (docs/ARCHITECTURE.md §7), 64 bits:
//
//	bits 63..32  owner: the number of the pipeline (or stage group) that
//	             made the link, unique in its Runtime (Pipeline.Number)
//	bits 31..28  role: LinkIn, LinkOut, LinkEgress, LinkSteal
//	bits 27..14  stage: the stage the link belongs to (its producer for
//	             LinkOut and LinkEgress, its consumer for LinkIn; the
//	             victim instance for LinkSteal), mod 2^14
//	bits 13..0   index: the consumer stage of LinkOut, the thief instance
//	             of LinkSteal; 0 otherwise
//
// Its String decodes it: "pipeline 7 stage 1 out 2".
type LinkID uint64

// LinkRole is the role of a link within its owner.
type LinkRole uint8

// The roles of links. The zero LinkRole is no role (an id from elsewhere).
const (
	LinkIn     LinkRole = iota + 1 // the host into a stage: its ingress
	LinkOut                        // one stage to another: a graph edge
	LinkEgress                     // an exit stage to the host
	LinkSteal                      // a stage group's steal link, victim to thief
)

const (
	linkIndexBits = 14
	linkStageBits = 14
	linkMask      = 1<<linkIndexBits - 1
)

// NewLinkID packs owner, role, stage and index into a LinkID (stage and
// index mod 2^14).
func NewLinkID(owner uint32, role LinkRole, stage, index int) LinkID {
	return LinkID(uint64(owner)<<32 | uint64(role&0xf)<<28 | uint64(stage&linkMask)<<linkIndexBits | uint64(index&linkMask))
}

// Owner is the number of the pipeline or group that made the link.
func (id LinkID) Owner() uint32 { return uint32(id >> 32) }

// Role is the link's role within its owner.
func (id LinkID) Role() LinkRole { return LinkRole(id >> 28 & 0xf) }

// Stage is the stage (or, for LinkSteal, the victim instance) it belongs to.
func (id LinkID) Stage() int { return int(id >> linkIndexBits & linkMask) }

// Index is LinkOut's consumer stage, LinkSteal's thief instance, else 0.
func (id LinkID) Index() int { return int(id & linkMask) }

// String decodes the id: "pipeline 7 stage 0 in", "pipeline 7 stage 1 out
// 2", "pipeline 7 stage 2 egress", "group 9 steal 0 → 1", or "link
// 0x…" for an id of no known role.
func (id LinkID) String() string {
	switch id.Role() {
	case LinkIn:
		return fmt.Sprintf("pipeline %d stage %d in", id.Owner(), id.Stage())
	case LinkOut:
		return fmt.Sprintf("pipeline %d stage %d out %d", id.Owner(), id.Stage(), id.Index())
	case LinkEgress:
		return fmt.Sprintf("pipeline %d stage %d egress", id.Owner(), id.Stage())
	case LinkSteal:
		return fmt.Sprintf("group %d steal %d → %d", id.Owner(), id.Stage(), id.Index())
	}
	return fmt.Sprintf("link %#x", uint64(id))
}

// linkOwners numbers the owners of links: every pipeline and stage group
// of every Runtime of the process takes the next (unique in the process,
// so in its Runtime too).
var linkOwners atomic.Uint32

// newLinkOwner returns a new owner number: a pipeline's, or one for the
// links a sub-package makes outside a pipeline (a stage group's steal
// links), so their LinkIDs name that owner apart from every pipeline.
func (rt *Runtime) newLinkOwner() uint32 { return linkOwners.Add(1) }
