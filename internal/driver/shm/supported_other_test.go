//go:build !linux

package shm

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
)

// TestMain checks that New refuses this OS with an error naming it, then
// stops: every other test here maps segments or makes Linux's system
// calls, which the *_other.go files only stand in for.
func TestMain(m *testing.M) {
	_, err := New(Config{})
	if !errors.Is(err, errors.ErrUnsupported) || !strings.Contains(err.Error(), runtime.GOOS) {
		fmt.Fprintf(os.Stderr, "New on %s returned %v; want an error naming the OS and wrapping errors.ErrUnsupported\n", runtime.GOOS, err)
		os.Exit(1)
	}
	fmt.Printf("shm tests skipped: %v\n", err)
	os.Exit(0)
}
