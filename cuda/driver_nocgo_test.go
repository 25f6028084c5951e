//go:build !cgo || !(linux || freebsd)

package cuda

import (
	"errors"
	"strings"
	"testing"
)

func TestWithoutCgoTheErrorSaysRebuild(t *testing.T) {
	_, err := loadDriverFrom([]string{"libcuda.so.1"})
	if !errors.Is(err, ErrNoDriver) || !strings.Contains(err.Error(), "CGO_ENABLED=1") {
		t.Fatalf("got %v", err)
	}
}
