//go:build !linux

package shm

import (
	"errors"
	"fmt"
	"runtime"
)

// errUnsupported is what every system-call stand-in in the *_other.go files
// returns. The transport is built on Linux's interfaces (futexes on shared
// words, pidfds, process_vm_readv, vmsplice, fallocate on tmpfs), with no
// portable equivalent behind them yet.
var errUnsupported = fmt.Errorf("shm: the shared-memory transport is not supported on %s (Linux only): %w", runtime.GOOS, errors.ErrUnsupported)

// Supported reports whether this OS has the shared-memory transport: off
// Linux it returns an error naming the OS that wraps errors.ErrUnsupported.
// New calls it first, so callers need it only to choose another transport
// up front.
func Supported() error { return errUnsupported }
