// Command genlayout writes the C header of the link-queue layout from the Go
// constants of packages p2pqueue (queues) and ringkernel (control blocks,
// trace records, codes), so the CUDA kernels and the host agree on
// every offset. Run it through `go generate ./kernels/...`.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"

	"github.com/ringactor/ringactor/barrier"
	"github.com/ringactor/ringactor/kernels"
	q "github.com/ringactor/ringactor/p2pqueue"
	rk "github.com/ringactor/ringactor/ringkernel"
)

type def struct {
	name  string
	value uint64
	doc   string
}

func defs() []def {
	return []def{
		{"RA_Q_MAGIC", uint64(q.Magic), "identifies a ringactor queue"},
		{"RA_Q_VERSION", uint64(q.Version), "layout version"},
		{"RA_Q_VERSION_FLAGGED", uint64(q.VersionFlagged), "layout version of a flagged queue (experimental)"},
		{"RA_Q_REGION_ALIGN", q.RegionAlign, "alignment of a region's base"},
		{"RA_Q_LINE_SIZE", q.LineSize, "header, producer and consumer lines"},
		{"RA_Q_OFF_MAGIC", q.OffMagic, "u32"},
		{"RA_Q_OFF_VERSION", q.OffVersion, "u16"},
		{"RA_Q_OFF_CAPACITY", q.OffCapacity, "u32, slots, power of two"},
		{"RA_Q_OFF_SLOT_SIZE", q.OffSlotSize, "u32, bytes incl. slot header"},
		{"RA_Q_OFF_LINK_ID", q.OffLinkID, "u64"},
		{"RA_Q_OFF_PRODUCER_LINE", q.OffProducerLine, "written by the producer only"},
		{"RA_Q_OFF_TAIL", q.OffTail, "u64, slots published; store-release"},
		{"RA_Q_OFF_CLOSED", q.OffClosed, "u32, set after the last publish"},
		{"RA_Q_OFF_BYTES_IN", q.OffBytesIn, "u64"},
		{"RA_Q_OFF_FULL_WAITS", q.OffFullWaits, "u64"},
		{"RA_Q_OFF_PUBLISHES", q.OffPublishes, "u64"},
		{"RA_Q_OFF_CONSUMER_LINE", q.OffConsumerLine, "written by the consumer only"},
		{"RA_Q_OFF_HEAD", q.OffHead, "u64, slots consumed; store-release"},
		{"RA_Q_OFF_PARKED", q.OffParked, "u32, consumer parked (host consumers only)"},
		{"RA_Q_OFF_BYTES_OUT", q.OffBytesOut, "u64"},
		{"RA_Q_OFF_EMPTY_POLLS", q.OffEmptyPolls, "u64"},
		{"RA_Q_OFF_RELEASES", q.OffReleases, "u64"},
		{"RA_Q_OFF_SLOTS", q.OffSlots, "slot k at OFF_SLOTS + (k & (capacity-1)) * slot_size"},
		{"RA_SLOT_HEADER_SIZE", q.SlotHeaderSize, "payload follows"},
		{"RA_SLOT_OFF_ID", q.SlotOffID, "u64"},
		{"RA_SLOT_OFF_TYPE", q.SlotOffType, "u32"},
		{"RA_SLOT_OFF_LEN", q.SlotOffLen, "u32, payload bytes"},
		{"RA_SLOT_OFF_FLAGS", q.SlotOffFlags, "u32"},
		{"RA_SLOT_OFF_ORIGIN", q.SlotOffOrigin, "u32, origin stage"},
		{"RA_SLOT_OFF_ENQUEUED", q.SlotOffEnqueued, "u64, ns"},
		{"RA_SLOT_ALIGN", q.SlotAlign, "slot sizes are multiples of this"},
		{"RA_MIN_SLOT_SIZE", q.MinSlotSize, ""},
		{"RA_MAX_SLOT_SIZE", q.MaxSlotSize, ""},
		{"RA_MIN_CAPACITY", q.MinCapacity, ""},
		{"RA_MAX_CAPACITY", q.MaxCapacity, ""},
		{"RA_FLAG_SAMPLED", uint64(q.FlagSampled), "traced through every stage"},
		{"RA_FLAG_ERROR", uint64(q.FlagError), "payload holds the reason"},
		{"RA_FLAG_CONTROL", uint64(q.FlagControl), "for the kernel, not the stage"},

		{"RA_CB_MAGIC", uint64(rk.CtrlMagic), "identifies a control block"},
		{"RA_CB_VERSION", uint64(rk.CtrlVersion), "control-block layout version"},
		{"RA_CB_SIZE", rk.CtrlSize, "bytes"},
		{"RA_CB_OFF_COMMAND", rk.CtrlOffCommand, "u32, host: the command"},
		{"RA_CB_OFF_COMMAND_SEQ", rk.CtrlOffCommandSeq, "u32, host: bumped after each command"},
		{"RA_CB_OFF_STAGE_ID", rk.CtrlOffStageID, "u32, host: stamped on output"},
		{"RA_CB_OFF_COMMAND_ARG", rk.CtrlOffCommandArg, "u64, host: the command's argument"},
		{"RA_CB_OFF_CLOCK_OFFSET", rk.CtrlOffClockOffset, "i64, host: host ns minus device clock ns"},
		{"RA_CB_OFF_BARRIER_FLAGS", rk.CtrlOffBarrierFlags, "u64, host: CmdBarrier's flag array (device address)"},
		{"RA_CB_OFF_BARRIER_INDEX", rk.CtrlOffBarrierIndex, "u32, host: CmdBarrier's participant index"},
		{"RA_CB_OFF_BARRIER_COUNT", rk.CtrlOffBarrierCount, "u32, host: CmdBarrier's participants"},
		{"RA_CB_OFF_BARRIER_GEN", rk.CtrlOffBarrierGen, "u64, host: CmdBarrier's generation"},
		{"RA_CB_OFF_BARRIER_AT", rk.CtrlOffBarrierAt, "u64, host: arrive once in-link BARRIER_LINK's head reaches it"},
		{"RA_CB_OFF_BARRIER_LINK", rk.CtrlOffBarrierLink, "u32, host: the in-link BARRIER_AT counts"},
		{"RA_CB_OFF_DEVICE_LINE", rk.CtrlOffDeviceLine, "written by the kernel only"},
		{"RA_CB_OFF_STATE", rk.CtrlOffState, "u32, kernel: the state"},
		{"RA_CB_OFF_COMMAND_ACK", rk.CtrlOffCommandAck, "u32, kernel: seq applied, after state"},
		{"RA_CB_OFF_HEARTBEAT", rk.CtrlOffHeartbeat, "u64, kernel: globaltimer ns"},
		{"RA_CB_OFF_PROCESSED", rk.CtrlOffProcessed, "u64"},
		{"RA_CB_OFF_DROPPED", rk.CtrlOffDropped, "u64, every dead letter"},
		{"RA_CB_OFF_ERRORS", rk.CtrlOffErrors, "u64, stage failures (also dropped)"},
		{"RA_CB_OFF_LAST_ERROR", rk.CtrlOffLastError, "i32, RA_CODE_*"},
		{"RA_CB_OFF_LAST_ERROR_ID", rk.CtrlOffLastErrID, "u64, message id"},
		{"RA_CB_OFF_TRACED", rk.CtrlOffTraced, "u64, trace records written"},
		{"RA_CB_OFF_STOLEN", rk.CtrlOffStolen, "u64, forwarded to thieves"},
		{"RA_CB_OFF_BUSY", rk.CtrlOffBusy, "u64, kernel: ns on batches of messages"},

		{"RA_STATE_LAUNCHED", uint64(rk.Launched), ""},
		{"RA_STATE_ACTIVE", uint64(rk.Active), ""},
		{"RA_STATE_IDLE", uint64(rk.Idle), ""},
		{"RA_STATE_TERMINATING", uint64(rk.Terminating), ""},
		{"RA_STATE_TERMINATED", uint64(rk.Terminated), ""},
		{"RA_STATE_FAULTED", uint64(rk.Faulted), ""},
		{"RA_CMD_NONE", uint64(rk.CmdNone), ""},
		{"RA_CMD_ACTIVATE", uint64(rk.CmdActivate), ""},
		{"RA_CMD_DEACTIVATE", uint64(rk.CmdDeactivate), ""},
		{"RA_CMD_TERMINATE", uint64(rk.CmdTerminate), "stop now, dead-letter the queue"},
		{"RA_CMD_TERMINATE_DRAIN", uint64(rk.CmdTerminateDrain), "stop once in-links close and drain"},
		{"RA_CMD_STEAL", uint64(rk.CmdSteal), "forward queued messages to a thief (arg: count | link << 32)"},
		{"RA_CMD_BARRIER", uint64(rk.CmdBarrier), "arrive at a flag-array barrier at a mark, then wait"},

		{"RA_BAR_MAGIC", uint64(barrier.Magic), "identifies a flag-array barrier (package barrier)"},
		{"RA_BAR_VERSION", uint64(barrier.Version), "flag-array layout version"},
		{"RA_BAR_OFF_MAGIC", barrier.OffMagic, "u32"},
		{"RA_BAR_OFF_VERSION", barrier.OffVersion, "u16"},
		{"RA_BAR_OFF_PARTICIPANTS", barrier.OffParticipants, "u32, n"},
		{"RA_BAR_HEADER_SIZE", barrier.HeaderSize, "participant 0's line follows"},
		{"RA_BAR_LINE_SIZE", barrier.LineSize, "one line per participant"},
		{"RA_BAR_OFF_GENERATION", barrier.OffGeneration, "u64 within a line: the participant's generation"},
		{"RA_BAR_MAX_PARTICIPANTS", barrier.MaxParticipants, ""},

		{"RA_REC_TRACE", rk.RecordTrace, "trace ring slot type"},
		{"RA_REC_DEAD_LETTER", rk.RecordDeadLetter, ""},
		{"RA_REC_FAULT", rk.RecordFault, ""},
		{"RA_REC_OFF_DEQUEUED", rk.RecOffDequeued, "u64 ns"},
		{"RA_REC_OFF_DONE", rk.RecOffDone, "u64 ns"},
		{"RA_REC_OFF_CODE", rk.RecOffCode, "i32 RA_CODE_*"},
		{"RA_REC_OFF_TEXT_LEN", rk.RecOffTextLen, "u32"},
		{"RA_REC_OFF_FROM", rk.RecOffFrom, "u32, stage the message came from"},
		{"RA_REC_OFF_TEXT", rk.RecOffText, ""},
		{"RA_TRACE_SLOT_SIZE", rk.TraceSlotSize, "slot size of trace rings"},

		{"RA_MAX_IN_LINKS", rk.MaxDeviceInLinks, "in-links of one device loop"},
		{"RA_MAX_OUT_LINKS", rk.MaxDeviceOutLinks, "out-links of one device loop"},
		{"RA_MAX_STEAL_LINKS", rk.MaxDeviceStealLinks, "steal links of one device loop"},
		{"RA_ROUTE_ONE", uint64(rk.RouteOne), "route: the one out-link"},
		{"RA_ROUTE_ALL", uint64(rk.RouteAll), "route: a copy to every out-link"},
		{"RA_ROUTE_ROUND_ROBIN", uint64(rk.RouteRoundRobin), "route: out-links in turn"},
		{"RA_ROUTE_KEY", uint64(rk.RouteKey), "route: by the hash of the u32 key"},
		{"RA_ROUTE_PORT", uint64(rk.RoutePort), "route: the port the stage returned"},
		{"RA_BATCH", rk.DeviceBatch, "messages one step of a device loop takes at most"},
		{"RA_ARG_OFF_CTRL", rk.ArgOffCtrl, "ra_ring_args: control block"},
		{"RA_ARG_OFF_IN", rk.ArgOffIn, "ra_ring_args: in-link regions"},
		{"RA_ARG_OFF_OUT", rk.ArgOffOut, "ra_ring_args: out-link regions"},
		{"RA_ARG_OFF_TRACE", rk.ArgOffTrace, "ra_ring_args: trace ring"},
		{"RA_ARG_OFF_PARAMS", rk.ArgOffParams, "ra_ring_args: params"},
		{"RA_ARG_OFF_STATE", rk.ArgOffState, "ra_ring_args: state"},
		{"RA_ARG_OFF_SINK", rk.ArgOffSink, "ra_ring_args: sink results"},
		{"RA_ARG_OFF_NUM_IN", rk.ArgOffNumIn, "ra_ring_args: in-links used"},
		{"RA_ARG_OFF_IN_SYS", rk.ArgOffInSys, "ra_ring_args: sys-scope in-links, bit mask"},
		{"RA_ARG_OFF_OUT_SYS", rk.ArgOffOutSys, "ra_ring_args: sys-scope out-links, bit mask"},
		{"RA_ARG_OFF_NUM_OUT", rk.ArgOffNumOut, "ra_ring_args: out-links used"},
		{"RA_ARG_OFF_ROUTE", rk.ArgOffRoute, "ra_ring_args: route"},
		{"RA_ARG_OFF_KEY_OFFSET", rk.ArgOffKeyOffset, "ra_ring_args: RouteKey's key offset"},
		{"RA_ARG_OFF_STEAL", rk.ArgOffSteal, "ra_ring_args: steal-link regions"},
		{"RA_ARG_OFF_NUM_STEAL", rk.ArgOffNumSteal, "ra_ring_args: steal links used"},
		{"RA_ARG_OFF_STEAL_SYS", rk.ArgOffStealSys, "ra_ring_args: sys-scope steal links, bit mask"},
		{"RA_ARG_OFF_BUF", rk.ArgOffBuf, "ra_ring_args: bound buffers' addresses"},
		{"RA_ARG_OFF_BUF_SIZE", rk.ArgOffBufSize, "ra_ring_args: bound buffers' sizes"},
		{"RA_ARG_OFF_NUM_BUF", rk.ArgOffNumBuf, "ra_ring_args: bound buffers"},
		{"RA_ARG_OFF_IN_LL", rk.ArgOffInLL, "ra_ring_args: flagged in-links, bit mask"},
		{"RA_ARG_OFF_OUT_LL", rk.ArgOffOutLL, "ra_ring_args: flagged out-links, bit mask"},
		{"RA_ARG_OFF_PHASE", rk.ArgOffPhase, "ra_ring_args: per-phase timers, 0 = off"},
		{"RA_MAX_STAGE_BUFFERS", rk.MaxStageBuffers, "ringkernel.MaxStageBuffers"},
		{"RA_ARG_OFF_VARIANT", rk.ArgOffVariant, "ra_ring_args: the device loop (ringkernel.LoopVariant)"},
		{"RA_LOOP_WARP", uint64(rk.LoopWarp), "ringkernel.LoopWarp: the warp loop (ra_warp.cuh)"},
		{"RA_LOOP_WARP_PREFETCH", uint64(rk.LoopWarpPrefetch), "ringkernel.LoopWarpPrefetch: the warp loop, pipelined ingress (ra_warp.cuh)"},
		{"RA_ARG_SIZE", rk.ArgSize, "ra_ring_args: bytes"},
	}
}

type code struct {
	name  string
	value rk.ErrorCode
}

func codes() []code {
	return []code{
		{"RA_CODE_OUTPUT_TOO_SMALL", rk.CodeOutputTooSmall}, {"RA_CODE_DOMAIN", rk.CodeDomain},
		{"RA_CODE_STAGE", rk.CodeStage}, {"RA_CODE_BAD_RESULT", rk.CodeBadResult},
		{"RA_CODE_NOT_FLOATS", rk.CodeNotFloats}, {"RA_CODE_CORRUPT_SLOT", rk.CodeCorruptSlot},
		{"RA_CODE_SHUTDOWN", rk.CodeShutdown}, {"RA_CODE_CORRUPT_QUEUE", rk.CodeCorruptQueue},
		{"RA_CODE_NO_KEY", rk.CodeNoKey}, {"RA_CODE_BAD_PORT", rk.CodeBadPort},
		{"RA_CODE_WRONG_TYPE", rk.CodeWrongType},
	}
}

// header renders the C header.
func header() []byte {
	var b bytes.Buffer
	b.WriteString(`// Code generated by kernels/internal/genlayout from packages p2pqueue and ringkernel; DO NOT EDIT.
// Regenerate with: go generate ./kernels/...
//
// Link-queue layout (little-endian). The producer owns tail, the consumer
// owns head; each publishes with a store-release and observes the other with
// a load-acquire (.sys scope when the other side is the host or a peer GPU).
#ifndef RINGACTOR_LAYOUT_H
#define RINGACTOR_LAYOUT_H

`)
	for _, d := range defs() {
		line := fmt.Sprintf("#define %-26s %#xu", d.name, d.value)
		if d.value < 10 {
			line = fmt.Sprintf("#define %-26s %du", d.name, d.value)
		}
		if d.doc != "" {
			line = fmt.Sprintf("%-44s // %s", line, d.doc)
		}
		b.WriteString(line + "\n")
	}
	b.WriteString("\n// Dead-letter codes (negative: a stage function may return them).\n")
	for _, c := range codes() {
		b.WriteString(fmt.Sprintf("#define %-26s (%d) // %s\n", c.name, c.value, c.value.String()))
	}
	b.WriteString(`
#if defined(__cplusplus) && __cplusplus >= 201103L
static_assert(RA_Q_OFF_SLOTS % RA_Q_REGION_ALIGN == 0, "slots must start on a line");
static_assert(RA_SLOT_OFF_ENQUEUED + 8 == RA_SLOT_HEADER_SIZE, "slot header is 32 bytes");
static_assert(RA_CB_OFF_DEVICE_LINE % RA_Q_LINE_SIZE == 0, "host and kernel lines are apart");
#endif

#endif // RINGACTOR_LAYOUT_H
`)
	return b.Bytes()
}

func main() {
	out := flag.String("o", "", "write the layout header to this file (default stdout)")
	types := flag.String("types", "", "also write the header of the built-in fixed-layout message types (kernels.BuiltinLayouts) to this file")
	flag.Parse()
	if *out == "" {
		os.Stdout.Write(header())
	} else if err := os.WriteFile(*out, header(), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "genlayout:", err)
		os.Exit(1)
	}
	if *types != "" {
		if err := os.WriteFile(*types, []byte(kernels.TypesHeader(kernels.BuiltinLayouts())), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "genlayout:", err)
			os.Exit(1)
		}
	}
}
