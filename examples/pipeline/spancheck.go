package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
)

// exportedSpan is the part of a span, as the OTel stdout exporter writes
// it (one JSON object per span), that checkSpans reads.
type exportedSpan struct {
	Name        string
	SpanContext struct{ TraceID, SpanID string }
	Parent      struct{ TraceID, SpanID string }
	StartTime   time.Time
	EndTime     time.Time
}

// spanCheck is what checkSpans found.
type spanCheck struct {
	Roots, Stages int
	// Bad lists the stage spans that are not inside their root's time
	// window, or whose root is missing (at most the first 10).
	Bad []string
	// Outside counts all stage spans outside their root's window.
	Outside int
}

// Root and stage span names, as package runtime makes them in the
// messaging conventions: "send <pipeline>" and "process <pipeline>/<stage>".
const (
	rootSpanPrefix  = "send "
	stageSpanPrefix = "process "
)

// checkSpans reads the spans the stdout exporter wrote to r and checks that
// every stage span is the child of a message's root span and lies within
// the root's time window: the stages' device timestamps, converted to host
// time, agree with the host's clock at ingress and delivery. Spans of other
// names are ignored. It fails when there is no root span to check.
func checkSpans(r io.Reader) (spanCheck, error) {
	var c spanCheck
	roots := map[string]exportedSpan{} // by trace and span id
	var stages []exportedSpan
	dec := json.NewDecoder(r)
	for {
		var s exportedSpan
		if err := dec.Decode(&s); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return c, fmt.Errorf("reading exported spans: %w", err)
		}
		switch {
		case strings.HasPrefix(s.Name, rootSpanPrefix):
			roots[s.SpanContext.TraceID+"/"+s.SpanContext.SpanID] = s
		case strings.HasPrefix(s.Name, stageSpanPrefix):
			stages = append(stages, s)
		}
	}
	c.Roots, c.Stages = len(roots), len(stages)
	if c.Roots == 0 {
		return c, errors.New("no message spans were exported: sample some messages (-sample)")
	}
	for _, s := range stages {
		root, ok := roots[s.SpanContext.TraceID+"/"+s.Parent.SpanID]
		var bad string
		switch {
		case !ok:
			bad = fmt.Sprintf("%s of trace %s: its parent %s is not a message span in the file", s.Name, s.SpanContext.TraceID, s.Parent.SpanID)
		case s.StartTime.Before(root.StartTime) || s.EndTime.After(root.EndTime):
			bad = fmt.Sprintf("%s of trace %s runs %s..%s, outside its message's %s..%s (by %v before, %v after)",
				s.Name, s.SpanContext.TraceID, s.StartTime.Format(time.RFC3339Nano), s.EndTime.Format(time.RFC3339Nano),
				root.StartTime.Format(time.RFC3339Nano), root.EndTime.Format(time.RFC3339Nano),
				max(root.StartTime.Sub(s.StartTime), 0), max(s.EndTime.Sub(root.EndTime), 0))
		default:
			continue
		}
		c.Outside++
		if len(c.Bad) < 10 {
			c.Bad = append(c.Bad, bad)
		}
	}
	if c.Outside > 0 {
		return c, fmt.Errorf("%d of %d stage spans are not within their message's span; first: %s", c.Outside, c.Stages, c.Bad[0])
	}
	return c, nil
}
