package ctxcheck

import (
	"context"
	"errors"
	"strings"
	"testing"
)

func TestNilAndEnded(t *testing.T) {
	//lint:ignore SA1012 a nil context is the input under test
	var none context.Context
	if err := NotNil(none, "Pipeline.Close"); !errors.Is(err, ErrNil) || !strings.Contains(err.Error(), "Pipeline.Close") {
		t.Fatalf("NotNil(nil) = %v; want ErrNil naming the call", err)
	}
	if err := Live(none, "Pipeline.Send"); !errors.Is(err, ErrNil) {
		t.Fatalf("Live(nil) = %v; want ErrNil", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := Live(ctx, "Pipeline.Send"); err != nil {
		t.Fatalf("Live(open ctx) = %v", err)
	}
	cancel()
	if err := Live(ctx, "Pipeline.Send"); !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "Pipeline.Send") {
		t.Fatalf("Live(cancelled) = %v; want context.Canceled naming the call", err)
	}
	if err := NotNil(ctx, "Pipeline.Close"); err != nil {
		t.Fatalf("NotNil(cancelled) = %v; an ended ctx is not nil", err)
	}
}
