package p2pqueue

import "fmt"

// LinkID names a link in diagnostics: it is stored in the link's header
// (Config.LinkID) and printed, decoded, by every error that names the
// link and by the runtime's Describe. One scheme for every link
// (docs/ARCHITECTURE.md §7), 64 bits:
//
//	bits 63..32  owner: the number of the pipeline (or stage group) that
//	             made the link, unique in its process (runtime's
//	             Pipeline.Number); for RoleTrace, the kernel's stage id
//	bits 31..28  role: RoleIn, RoleOut, RoleEgress, RoleSteal, RoleTrace
//	bits 27..14  stage: the stage the link belongs to (its producer for
//	             RoleOut and RoleEgress, its consumer for RoleIn; the
//	             victim instance for RoleSteal), mod 2^14
//	bits 13..0   index: the consumer stage of RoleOut, the thief instance
//	             of RoleSteal; 0 otherwise
//
// Its String decodes it: "pipeline 7 stage 1 out 2". An id of no known
// role (a link formatted by other code) prints as "link 0x…".
type LinkID uint64

// LinkRole is the role of a link within its owner.
type LinkRole uint8

// The roles of links. The zero LinkRole is no role (an id from elsewhere).
const (
	RoleIn     LinkRole = iota + 1 // the host into a stage: its ingress
	RoleOut                        // one stage to another: a graph edge
	RoleEgress                     // an exit stage to the host
	RoleSteal                      // a stage group's steal link, victim to thief
	RoleTrace                      // a ring kernel's trace ring, kernel to host
)

const (
	linkIndexBits = 14
	linkMask      = 1<<linkIndexBits - 1
)

// NewLinkID packs owner, role, stage and index into a LinkID (stage and
// index mod 2^14).
func NewLinkID(owner uint32, role LinkRole, stage, index int) LinkID {
	return LinkID(uint64(owner)<<32 | uint64(role&0xf)<<28 | uint64(stage&linkMask)<<linkIndexBits | uint64(index&linkMask))
}

// Owner is the number of the pipeline or group that made the link (for
// RoleTrace, the kernel's stage id).
func (id LinkID) Owner() uint32 { return uint32(id >> 32) }

// Role is the link's role within its owner.
func (id LinkID) Role() LinkRole { return LinkRole(id >> 28 & 0xf) }

// Stage is the stage (or, for RoleSteal, the victim instance) it belongs to.
func (id LinkID) Stage() int { return int(id >> linkIndexBits & linkMask) }

// Index is RoleOut's consumer stage, RoleSteal's thief instance, else 0.
func (id LinkID) Index() int { return int(id & linkMask) }

// String decodes the id: "pipeline 7 stage 0 in", "pipeline 7 stage 1 out
// 2", "pipeline 7 stage 2 egress", "group 9 steal 0 → 1", "trace of stage
// 3", or "link 0x…" for an id of no known role.
func (id LinkID) String() string {
	switch id.Role() {
	case RoleIn:
		return fmt.Sprintf("pipeline %d stage %d in", id.Owner(), id.Stage())
	case RoleOut:
		return fmt.Sprintf("pipeline %d stage %d out %d", id.Owner(), id.Stage(), id.Index())
	case RoleEgress:
		return fmt.Sprintf("pipeline %d stage %d egress", id.Owner(), id.Stage())
	case RoleSteal:
		return fmt.Sprintf("group %d steal %d → %d", id.Owner(), id.Stage(), id.Index())
	case RoleTrace:
		return fmt.Sprintf("trace of stage %d", id.Owner())
	}
	return fmt.Sprintf("link %#x", uint64(id))
}

// named is how errors name the link: "link (pipeline 7 stage 1 out 2)", or
// "link 0x2a" for an id of no known role.
func (id LinkID) named() string {
	if id.Role() >= RoleIn && id.Role() <= RoleTrace {
		return "link (" + id.String() + ")"
	}
	return id.String()
}
