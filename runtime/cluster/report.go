package cluster

import (
	"time"

	rk "github.com/ringactor/ringactor/ringkernel"
	ra "github.com/ringactor/ringactor/runtime"
)

// reportStage is one stage of a segment's report: what the origin's Stats
// and Latency list for a stage that runs on another node.
type reportStage struct {
	stats ra.StageStats
	lat   ra.StageLatency
}

// reportFields is the number of fields of one stage of a report.
const reportFields = 15

// reportOf is p's report: its stages' counters and latencies, in order.
func reportOf(p *ra.Pipeline) []reportStage {
	st, lat := p.Stats().Stages, p.Latency()
	rep := make([]reportStage, len(st))
	for i := range st {
		rep[i].stats = st[i]
		if i < len(lat) {
			rep[i].lat = lat[i]
		}
	}
	return rep
}

// onNode marks a report's stages as running on node.
func onNode(rep []reportStage, node string) []reportStage {
	out := make([]reportStage, len(rep))
	for i, s := range rep {
		s.stats.Node, s.lat.Node = node, node
		out[i] = s
	}
	return out
}

func (w *writer) report(rep []reportStage) {
	w.e.EncodeArrayLen(len(rep))
	for _, s := range rep {
		w.e.EncodeArrayLen(reportFields)
		w.e.EncodeString(fitText(s.stats.Stage, MaxText))
		w.e.EncodeInt(int64(s.stats.Device))
		for _, v := range []uint64{uint64(s.stats.State), s.stats.Processed, s.stats.Dropped, s.stats.Errors, s.stats.Traced,
			s.stats.Queued(), s.lat.Samples} {
			w.e.EncodeUint(v)
		}
		for _, p := range []ra.Percentiles{s.lat.QueueWait, s.lat.Service} {
			for _, d := range []time.Duration{p.P50, p.P90, p.P99} {
				w.e.EncodeUint(uint64(max(d, 0)))
			}
		}
	}
}

func (r *reader) report() ([]reportStage, error) {
	n, err := r.arrayLen("report")
	if err != nil {
		return nil, err
	}
	if n > maxWireStages {
		return nil, r.bad("report of %d stages, at most %d", n, maxWireStages)
	}
	rep := make([]reportStage, 0, n)
	for range n {
		var s reportStage
		if err := r.fields("report stage", reportFields); err != nil {
			return nil, err
		}
		if s.stats.Stage, err = r.string("report stage name"); err != nil {
			return nil, err
		}
		dev, err := r.int("report stage device")
		if err != nil {
			return nil, err
		}
		if int64(int32(dev)) != dev {
			return nil, r.bad("report stage %q device %d out of range", s.stats.Stage, dev)
		}
		s.stats.Device, s.lat.Stage, s.lat.Device = int(dev), s.stats.Stage, int(dev)
		var queued uint64
		for _, dst := range []*uint64{nil, &s.stats.Processed, &s.stats.Dropped, &s.stats.Errors, &s.stats.Traced, &queued, &s.lat.Samples} {
			v, err := r.uint("report stage counter")
			if err != nil {
				return nil, err
			}
			if dst == nil {
				if v > uint64(^uint32(0)) {
					return nil, r.bad("report stage %q state %d out of range", s.stats.Stage, v)
				}
				s.stats.State = rk.State(v)
				continue
			}
			*dst = v
		}
		s.stats.InQueued = []int{int(min(queued, 1<<31-1))}
		for _, p := range []*ra.Percentiles{&s.lat.QueueWait, &s.lat.Service} {
			for _, d := range []*time.Duration{&p.P50, &p.P90, &p.P99} {
				v, err := r.uint("report latency")
				if err != nil {
					return nil, err
				}
				*d = time.Duration(min(v, 1<<63-1))
			}
		}
		s.stats.Status.Stage = s.stats.Stage
		rep = append(rep, s)
	}
	return rep, nil
}

// encodeClosed answers Close: the error text ("" when it closed cleanly)
// and the segment's last report.
func encodeClosed(text string, rep []reportStage) []byte {
	w := newWriter(0, len(text))
	w.envelope(kindClosed, 2)
	w.e.EncodeString(fitText(text, MaxText))
	w.report(rep)
	return w.buf.Bytes()
}

func decodeClosed(b []byte) (string, []reportStage, error) {
	r := newReader(b)
	if err := r.envelopeOf(kindClosed, "Closed"); err != nil {
		return "", nil, err
	}
	if err := r.fields("Closed", 2); err != nil {
		return "", nil, err
	}
	text, err := r.string("Closed text")
	if err != nil {
		return "", nil, err
	}
	rep, err := r.report()
	if err == nil && r.r.Len() != 0 {
		err = r.bad("%d trailing bytes after the Closed", r.r.Len())
	}
	return text, rep, err
}

func encodeReportReq() []byte {
	w := newWriter(0, 0)
	w.envelope(kindReportReq, 0)
	return w.buf.Bytes()
}

func encodeReport(rep []reportStage) []byte {
	w := newWriter(0, 64*len(rep))
	w.envelope(kindReport, 1)
	w.report(rep)
	return w.buf.Bytes()
}

func decodeReport(b []byte) ([]reportStage, error) {
	r := newReader(b)
	if err := r.envelopeOf(kindReport, "Report"); err != nil {
		return nil, err
	}
	if err := r.fields("Report", 1); err != nil {
		return nil, err
	}
	rep, err := r.report()
	if err == nil && r.r.Len() != 0 {
		err = r.bad("%d trailing bytes after the Report", r.r.Len())
	}
	return rep, err
}
