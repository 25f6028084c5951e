// Package ctxcheck refuses the contexts a blocking call cannot honour: a
// nil one, which would panic deep inside the call, and, for calls that
// must not start work for a caller who has given up, one that has ended.
// Every exported call of package runtime and its sub-packages that takes
// a context checks it here first, so the errors read the same everywhere.
package ctxcheck

import (
	"context"
	"errors"
	"fmt"
)

// ErrNil: a nil context.Context was passed (runtime.ErrNilContext).
var ErrNil = errors.New("ringactor: nil context")

// ErrEnded marks Live's refusal of an ended ctx: the call did nothing, so a
// caller that counts messages knows they were not counted.
var ErrEnded = errors.New("the context had ended before the call, so nothing was done")

// NotNil refuses a nil ctx, naming the call it was passed to.
func NotNil(ctx context.Context, call string) error {
	if ctx == nil {
		return fmt.Errorf("%w passed to %s: pass context.Background(), or a context with a deadline", ErrNil, call)
	}
	return nil
}

// Live refuses a nil ctx, or one that has already ended (with its error):
// the call does nothing then.
// ErrNotSent marks the refusal of a send before it did anything
// (runtime.ErrNotSent): the messages were neither sent nor counted.
var ErrNotSent = errors.New("ringactor: not sent")

// LiveSend is Live for a call that sends messages: its refusal also wraps
// ErrNotSent, so the caller can tell "not sent" from "dead-lettered".
func LiveSend(ctx context.Context, call string) error {
	if err := Live(ctx, call); err != nil {
		return fmt.Errorf("%w (nothing was counted): %w", ErrNotSent, err)
	}
	return nil
}

func Live(ctx context.Context, call string) error {
	if err := NotNil(ctx, call); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("ringactor: %s: %w: %w", call, ErrEnded, err)
	}
	return nil
}
