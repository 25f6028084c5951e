package barrier

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Errors returned by the barrier, wrapped with detail; test for them with
// errors.Is.
var (
	// ErrBadMagic: the region does not hold a ringactor barrier.
	ErrBadMagic = errors.New("barrier: bad magic")
	// ErrBadVersion: the region holds a barrier of another layout version.
	ErrBadVersion = errors.New("barrier: unsupported layout version")
	// ErrBadCount: the participant count is outside 1..MaxParticipants.
	ErrBadCount = errors.New("barrier: bad participant count")
	// ErrRegionTooSmall: the region is shorter than its barrier needs.
	ErrRegionTooSmall = errors.New("barrier: region too small")
	// ErrMisaligned: the region's base is not RegionAlign-aligned.
	ErrMisaligned = errors.New("barrier: region misaligned")
	// ErrNotHostVisible: the host cannot touch the region's memory.
	ErrNotHostVisible = errors.New("barrier: region not host-visible")
	// ErrBigEndian: the layout is little-endian and so must the host be.
	ErrBigEndian = errors.New("barrier: big-endian host not supported")
	// ErrBadNames: the names given do not match the participants.
	ErrBadNames = errors.New("barrier: bad participant names")
	// ErrBadIndex: no participant has this index.
	ErrBadIndex = errors.New("barrier: no such participant")
	// ErrClaimed: the participant's handle was already taken.
	ErrClaimed = errors.New("barrier: participant already claimed")
	// ErrBadGeneration: a participant arrived at a generation not above
	// its last one.
	ErrBadGeneration = errors.New("barrier: generation does not increase")
	// ErrTimeout: a wait's context deadline passed before every
	// participant arrived. The error is a *TimeoutError.
	ErrTimeout = errors.New("barrier: wait timed out")
)

// TimeoutError is the error of a wait its context ended: the generation
// waited for and the participants that had not reached it. It matches
// ErrTimeout when the context's deadline passed, and wraps the context's
// error, so errors.Is(err, context.DeadlineExceeded) (or
// context.Canceled, for a cancelled wait) holds too.
type TimeoutError struct {
	Generation uint64
	// Missing are the indices of the participants that had not arrived.
	Missing []int
	// Names are their names, in the same order, when the barrier was given
	// names (WithNames); nil otherwise.
	Names []string
	// Err is the context's error.
	Err error
}

func (e *TimeoutError) Error() string {
	var b strings.Builder
	if errors.Is(e.Err, context.DeadlineExceeded) {
		b.WriteString("barrier: timed out at generation ")
	} else {
		b.WriteString("barrier: wait ended at generation ")
	}
	b.WriteString(strconv.FormatUint(e.Generation, 10))
	b.WriteString(" waiting for participant")
	if len(e.Missing) != 1 {
		b.WriteString("s")
	}
	for k, i := range e.Missing {
		if k > 0 {
			b.WriteString(",")
		}
		b.WriteString(" ")
		b.WriteString(strconv.Itoa(i))
		if k < len(e.Names) {
			fmt.Fprintf(&b, " (%s)", e.Names[k])
		}
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Is reports ErrTimeout for a wait whose deadline passed.
func (e *TimeoutError) Is(target error) bool {
	return target == ErrTimeout && errors.Is(e.Err, context.DeadlineExceeded)
}

// Unwrap returns the context's error.
func (e *TimeoutError) Unwrap() error { return e.Err }
