package ringkernel

import (
	"errors"
	"fmt"
	"sync/atomic"
	"unsafe"

	"github.com/ringactor/ringactor/internal/order"
	"github.com/ringactor/ringactor/p2pqueue"
)

// Control block layout. These constants are the single source of truth: `go
// generate ./kernels/...` writes them into the header device code includes.
// The host writes only the host line and the kernel only the device line,
// so the two never share a cache line (or a PCIe write).
const (
	// CtrlMagic identifies a control block ("RACB" in memory order).
	CtrlMagic uint32 = 0x42434152
	// CtrlVersion is the control-block layout version.
	CtrlVersion uint16 = 1
	// CtrlSize is the size of a control block in bytes.
	CtrlSize = 256

	// Host line: written by the host only.
	CtrlOffMagic      = 0  // u32
	CtrlOffVersion    = 4  // u16
	CtrlOffCommand    = 8  // u32, Command; written before CommandSeq
	CtrlOffCommandSeq = 12 // u32, bumped after each command (store-release)
	CtrlOffStageID    = 16 // u32, the stage id the kernel stamps on its output
	CtrlOffCommandArg = 24 // u64, the command's argument (CmdSteal: count | link<<32); before CommandSeq
	// CtrlOffClockOffset: i64, host ns minus device clock ns. A device
	// kernel adds it to every time it writes (heartbeat, trace records,
	// slot stamps), so the wire carries host time only; the host may
	// update it (recalibration) and the kernel re-reads it now and then.
	CtrlOffClockOffset = 32
	// CmdBarrier's parameters (ringkernel.Kernel.ArriveAt), written
	// before CommandSeq like CommandArg: the flag array's device address
	// (package barrier's layout), this kernel's participant index and the
	// participant count, the generation to arrive at, and the consumed
	// count (head) of in-link BarrierLink at which to arrive.
	CtrlOffBarrierFlags = 64 // u64, device address of the flag array
	CtrlOffBarrierIndex = 72 // u32, this kernel's participant index
	CtrlOffBarrierCount = 76 // u32, participants
	CtrlOffBarrierGen   = 80 // u64, generation to arrive at
	CtrlOffBarrierAt    = 88 // u64, arrive once in-link BarrierLink's head reaches this
	CtrlOffBarrierLink  = 96 // u32, the in-link whose head At counts

	// Device line: written by the kernel only.
	CtrlOffDeviceLine = 128
	CtrlOffState      = 128 // u32, State
	CtrlOffCommandAck = 132 // u32, the CommandSeq last applied (store-release after State)
	CtrlOffHeartbeat  = 136 // u64, device clock in ns, each loop iteration
	CtrlOffProcessed  = 144 // u64, messages the stage handled and passed on
	CtrlOffDropped    = 152 // u64, messages dead-lettered, for any reason
	CtrlOffErrors     = 160 // u64, messages the stage function failed (also dropped)
	CtrlOffLastError  = 168 // i32, ErrorCode of the last dead letter
	CtrlOffLastErrID  = 176 // u64, message id of the last dead letter
	CtrlOffTraced     = 184 // u64, trace records written
	CtrlOffStolen     = 192 // u64, messages forwarded to thieves (CmdSteal)
	// CtrlOffBusy: u64, clock ns the loop spent on batches of messages
	// (from a batch's take to its release), for the device's busy
	// fraction. The sim loop and the CUDA loop (globaltimer ns) write it.
	CtrlOffBusy = 200
)

// ErrBadControlBlock: memory that is not a valid control block.
var ErrBadControlBlock = errors.New("ringkernel: bad control block")

// ControlBlock is a kernel's control block in memory both the host and the
// kernel can reach (mapped pinned memory on a GPU, Go memory on sim).
//
// Memory order: internal/order's rule (one writer per word, release stores,
// acquire loads). The host writes Command, then CommandSeq; the kernel
// reads CommandSeq, then Command, and writes State, then CommandAck.
// Counters are single-writer words.
type ControlBlock struct {
	r                                                   p2pqueue.Region
	command, seq, stage, state, ack                     *uint32
	heartbeat, processed, dropped, errs, lastID, traced *uint64
	arg, stolen, clockOffset, busy                      *uint64
	lastErr                                             *int32
}

// InitControlBlock formats r as the control block of stage id, in state
// Launched with no command pending, and returns it.
func InitControlBlock(r p2pqueue.Region, stageID uint32) (*ControlBlock, error) {
	cb, err := viewControlBlock(r)
	if err != nil {
		return nil, err
	}
	clear(r.Bytes[:CtrlSize])
	order.StoreRelease32(cb.stage, stageID)
	order.StoreRelease32(cb.state, uint32(Launched))
	order.StoreRelease32(order.Word32(r.Bytes, CtrlOffVersion), uint32(CtrlVersion))
	order.StoreRelease32(order.Word32(r.Bytes, CtrlOffMagic), CtrlMagic) // last
	return cb, nil
}

// AttachControlBlock checks r holds a control block and returns it.
func AttachControlBlock(r p2pqueue.Region) (*ControlBlock, error) {
	cb, err := viewControlBlock(r)
	if err != nil {
		return nil, err
	}
	if m := order.LoadAcquire32(order.Word32(r.Bytes, CtrlOffMagic)); m != CtrlMagic {
		return nil, fmt.Errorf("%w: magic %#x, want %#x", ErrBadControlBlock, m, CtrlMagic)
	}
	if v := uint16(order.LoadAcquire32(order.Word32(r.Bytes, CtrlOffVersion))); v != CtrlVersion {
		return nil, fmt.Errorf("%w: version %d, want %d", ErrBadControlBlock, v, CtrlVersion)
	}
	return cb, nil
}

func viewControlBlock(r p2pqueue.Region) (*ControlBlock, error) {
	b := r.Bytes
	if !r.Kind.HostVisible() || b == nil {
		return nil, fmt.Errorf("%w: %s memory is not host-visible; put control blocks in mapped pinned memory", ErrBadControlBlock, r.Kind)
	}
	if len(b) < CtrlSize {
		return nil, fmt.Errorf("%w: %d bytes, need %d", ErrBadControlBlock, len(b), CtrlSize)
	}
	if uintptr(unsafe.Pointer(&b[0]))%p2pqueue.RegionAlign != 0 {
		return nil, fmt.Errorf("%w: base not %d-byte aligned", ErrBadControlBlock, p2pqueue.RegionAlign)
	}
	if !order.LittleEndian {
		return nil, fmt.Errorf("%w: this host is big-endian; control blocks are little-endian words shared with the device", ErrBadControlBlock)
	}
	w32 := func(off int) *uint32 { return order.Word32(b, off) }
	w64 := func(off int) *uint64 { return order.Word64(b, off) }
	return &ControlBlock{
		r:       r,
		command: w32(CtrlOffCommand), seq: w32(CtrlOffCommandSeq), stage: w32(CtrlOffStageID),
		state: w32(CtrlOffState), ack: w32(CtrlOffCommandAck),
		heartbeat: w64(CtrlOffHeartbeat), processed: w64(CtrlOffProcessed), dropped: w64(CtrlOffDropped),
		errs: w64(CtrlOffErrors), lastID: w64(CtrlOffLastErrID), traced: w64(CtrlOffTraced),
		arg: w64(CtrlOffCommandArg), stolen: w64(CtrlOffStolen), clockOffset: w64(CtrlOffClockOffset), busy: w64(CtrlOffBusy),
		lastErr: (*int32)(unsafe.Pointer(&b[CtrlOffLastError])),
	}, nil
}

// Region is the memory the control block lives in.
func (cb *ControlBlock) Region() p2pqueue.Region { return cb.r }

// ---- host side ----

// Post writes command c and returns its sequence number; the kernel has
// applied it once Acked returns that number.
func (cb *ControlBlock) Post(c Command) uint32 { return cb.PostArg(c, 0) }

// PostArg is Post with the command's argument.
func (cb *ControlBlock) PostArg(c Command, arg uint64) uint32 {
	seq := order.LoadAcquire32(cb.seq) + 1
	order.StoreRelease64(cb.arg, arg)
	order.StoreRelease32(cb.command, uint32(c))
	order.StoreRelease32(cb.seq, seq) // after the command: the kernel reads seq first
	return seq
}

// BarrierParams are CmdBarrier's parameters (the control block's host line).
type BarrierParams struct {
	Flags        uint64 // device address of the flag array
	Index, Count uint32 // this kernel's participant index; participants
	Gen          uint64 // generation to arrive at
	At           uint64 // in-link Link's consumed count (head) to arrive at
	Link         uint32 // the in-link At counts
}

// PostBarrier writes CmdBarrier's parameters, then the command.
func (cb *ControlBlock) PostBarrier(p BarrierParams) uint32 {
	b := cb.r.Bytes
	order.StoreRelease64(order.Word64(b, CtrlOffBarrierFlags), p.Flags)
	order.StoreRelease32(order.Word32(b, CtrlOffBarrierIndex), p.Index)
	order.StoreRelease32(order.Word32(b, CtrlOffBarrierCount), p.Count)
	order.StoreRelease64(order.Word64(b, CtrlOffBarrierGen), p.Gen)
	order.StoreRelease64(order.Word64(b, CtrlOffBarrierAt), p.At)
	order.StoreRelease32(order.Word32(b, CtrlOffBarrierLink), p.Link)
	return cb.PostArg(CmdBarrier, 0)
}

// Barrier reads the pending CmdBarrier's parameters (after Pending).
func (cb *ControlBlock) Barrier() BarrierParams {
	b := cb.r.Bytes
	return BarrierParams{
		Flags: order.LoadAcquire64(order.Word64(b, CtrlOffBarrierFlags)),
		Index: order.LoadAcquire32(order.Word32(b, CtrlOffBarrierIndex)),
		Count: order.LoadAcquire32(order.Word32(b, CtrlOffBarrierCount)),
		Gen:   order.LoadAcquire64(order.Word64(b, CtrlOffBarrierGen)),
		At:    order.LoadAcquire64(order.Word64(b, CtrlOffBarrierAt)),
		Link:  order.LoadAcquire32(order.Word32(b, CtrlOffBarrierLink)),
	}
}

// SetClockOffset tells a device kernel the host-minus-device clock offset
// in ns, which it adds to every time it writes. A backend whose kernels
// read the host's clock (sim) leaves it 0.
func (cb *ControlBlock) SetClockOffset(ns int64) { order.StoreRelease64(cb.clockOffset, uint64(ns)) }

// ClockOffset is the offset last set.
func (cb *ControlBlock) ClockOffset() int64 { return int64(order.LoadAcquire64(cb.clockOffset)) }

// Acked is the sequence number of the last command the kernel applied.
func (cb *ControlBlock) Acked() uint32 { return order.LoadAcquire32(cb.ack) }

// State is the kernel's state as it last wrote it.
func (cb *ControlBlock) State() State { return State(order.LoadAcquire32(cb.state)) }

// StageID is the stage id the kernel stamps on what it emits.
func (cb *ControlBlock) StageID() uint32 { return order.LoadAcquire32(cb.stage) }

// Counters are a kernel's counters as read from its control block.
type Counters struct {
	Processed, Dropped, Errors, Traced uint64
	Stolen                             uint64 // forwarded to thieves
	Heartbeat                          uint64 // device clock, ns
	Busy                               uint64 // ns spent on batches of messages
	LastError                          ErrorCode
	LastErrorID                        uint64
}

// Counters reads the kernel's counters.
func (cb *ControlBlock) Counters() Counters {
	return Counters{
		Processed: order.LoadAcquire64(cb.processed), Dropped: order.LoadAcquire64(cb.dropped),
		Errors: order.LoadAcquire64(cb.errs), Traced: order.LoadAcquire64(cb.traced),
		Stolen:    order.LoadAcquire64(cb.stolen),
		Heartbeat: order.LoadAcquire64(cb.heartbeat),
		Busy:      order.LoadAcquire64(cb.busy),
		LastError: ErrorCode(atomic.LoadInt32(cb.lastErr)), LastErrorID: order.LoadAcquire64(cb.lastID),
	}
}

// ---- kernel side (the sim backend; device code does the same in CUDA) ----

// Pending returns the command the host posted since ack, if any.
func (cb *ControlBlock) Pending(ack uint32) (Command, uint32, bool) {
	seq := order.LoadAcquire32(cb.seq)
	if seq == ack {
		return CmdNone, ack, false
	}
	return Command(order.LoadAcquire32(cb.command)), seq, true
}

// Arg is the argument of the pending command (read after Pending).
func (cb *ControlBlock) Arg() uint64 { return order.LoadAcquire64(cb.arg) }

// StoreStolen publishes the count of messages forwarded to thieves; store
// it before acknowledging the CmdSteal that moved them.
func (cb *ControlBlock) StoreStolen(n uint64) { order.StoreRelease64(cb.stolen, n) }

// StoreBusy publishes the clock ns the loop has spent on messages.
func (cb *ControlBlock) StoreBusy(ns uint64) { order.StoreRelease64(cb.busy, ns) }

// Apply records state s and acknowledges command seq.
func (cb *ControlBlock) Apply(s State, seq uint32) {
	order.StoreRelease32(cb.state, uint32(s))
	order.StoreRelease32(cb.ack, seq) // after the state: an acked host sees it
}

// SetState records state s without acknowledging a command (loop end, fault).
func (cb *ControlBlock) SetState(s State) { order.StoreRelease32(cb.state, uint32(s)) }

// Beat stores the heartbeat.
func (cb *ControlBlock) Beat(deviceNanos uint64) { order.StoreRelease64(cb.heartbeat, deviceNanos) }

// StoreCounters publishes the kernel's counters.
func (cb *ControlBlock) StoreCounters(processed, dropped, errs, traced uint64) {
	order.StoreRelease64(cb.processed, processed)
	order.StoreRelease64(cb.dropped, dropped)
	order.StoreRelease64(cb.errs, errs)
	order.StoreRelease64(cb.traced, traced)
}

// StoreLastError records the last dead letter's code and message id.
func (cb *ControlBlock) StoreLastError(code ErrorCode, id uint64) {
	order.StoreRelease64(cb.lastID, id)
	atomic.StoreInt32(cb.lastErr, int32(code))
}
