package wire

import (
	"time"

	rk "github.com/ringactor/ringactor/ringkernel"
	ra "github.com/ringactor/ringactor/runtime"
)

// ReportStage is one stage of a segment's report: what the origin's Stats
// and Latency list for a stage that runs on another node.
type ReportStage struct {
	Stats ra.StageStats
	Lat   ra.StageLatency
}

// reportFields is the number of fields of one stage of a report.
const reportFields = 15

func (w *writer) report(rep []ReportStage) {
	w.e.EncodeArrayLen(len(rep))
	for _, s := range rep {
		w.e.EncodeArrayLen(reportFields)
		w.e.EncodeString(FitText(s.Stats.Stage, MaxText))
		w.e.EncodeInt(int64(s.Stats.Device))
		for _, v := range []uint64{uint64(s.Stats.State), s.Stats.Processed, s.Stats.Dropped, s.Stats.Errors, s.Stats.Traced,
			s.Stats.Queued(), s.Lat.Samples} {
			w.e.EncodeUint(v)
		}
		for _, p := range []ra.Percentiles{s.Lat.QueueWait, s.Lat.Service} {
			for _, d := range []time.Duration{p.P50, p.P90, p.P99} {
				w.e.EncodeUint(uint64(max(d, 0)))
			}
		}
	}
}

func (r *reader) report() ([]ReportStage, error) {
	n, err := r.arrayLen("report")
	if err != nil {
		return nil, err
	}
	if n > MaxStages {
		return nil, r.bad("report of %d stages, at most %d", n, MaxStages)
	}
	rep := make([]ReportStage, 0, n)
	for range n {
		var s ReportStage
		if err := r.fields("report stage", reportFields); err != nil {
			return nil, err
		}
		if s.Stats.Stage, err = r.string("report stage name"); err != nil {
			return nil, err
		}
		dev, err := r.int("report stage device")
		if err != nil {
			return nil, err
		}
		if int64(int32(dev)) != dev {
			return nil, r.bad("report stage %q device %d out of range", s.Stats.Stage, dev)
		}
		s.Stats.Device, s.Lat.Stage, s.Lat.Device = int(dev), s.Stats.Stage, int(dev)
		var queued uint64
		for _, dst := range []*uint64{nil, &s.Stats.Processed, &s.Stats.Dropped, &s.Stats.Errors, &s.Stats.Traced, &queued, &s.Lat.Samples} {
			v, err := r.uint("report stage counter")
			if err != nil {
				return nil, err
			}
			if dst == nil {
				if v > uint64(^uint32(0)) {
					return nil, r.bad("report stage %q state %d out of range", s.Stats.Stage, v)
				}
				s.Stats.State = rk.State(v)
				continue
			}
			*dst = v
		}
		s.Stats.InQueued = []int{int(min(queued, 1<<31-1))}
		for _, p := range []*ra.Percentiles{&s.Lat.QueueWait, &s.Lat.Service} {
			for _, d := range []*time.Duration{&p.P50, &p.P90, &p.P99} {
				v, err := r.uint("report latency")
				if err != nil {
					return nil, err
				}
				*d = time.Duration(min(v, 1<<63-1))
			}
		}
		s.Stats.Status.Stage = s.Stats.Stage
		rep = append(rep, s)
	}
	return rep, nil
}

// EncodeClosed answers Close: the error text ("" when it closed cleanly)
// and the segment's last report.
func EncodeClosed(text string, rep []ReportStage) []byte {
	w := newWriter(0, len(text))
	w.envelope(KindClosed, 2)
	w.e.EncodeString(FitText(text, MaxText))
	w.report(rep)
	return w.buf.Bytes()
}

func DecodeClosed(b []byte) (string, []ReportStage, error) {
	r := newReader(b)
	if err := r.envelopeOf(KindClosed, "Closed"); err != nil {
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

func EncodeReportReq() []byte {
	w := newWriter(0, 0)
	w.envelope(KindReportReq, 0)
	return w.buf.Bytes()
}

func EncodeReport(rep []ReportStage) []byte {
	w := newWriter(0, 64*len(rep))
	w.envelope(KindReport, 1)
	w.report(rep)
	return w.buf.Bytes()
}

func DecodeReport(b []byte) ([]ReportStage, error) {
	r := newReader(b)
	if err := r.envelopeOf(KindReport, "Report"); err != nil {
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
