//go:build !linux

package shm

import (
	"errors"
	"runtime"
)

// errUnsupported is what New and every system-call stand-in in the
// *_other.go files return. The transport is built on Linux's interfaces
// (futexes on shared words, pidfds, process_vm_readv, vmsplice, fallocate
// on tmpfs), with no portable equivalent behind them yet.
var errUnsupported error = unsupported{}

// unsupported names the OS; errors.Is finds errors.ErrUnsupported in it,
// without that error's text ("unsupported operation") in the message.
type unsupported struct{}

func (unsupported) Error() string { return "shm: not supported on " + runtime.GOOS + " (Linux only)" }

func (unsupported) Is(target error) bool { return target == errors.ErrUnsupported }

// Supported reports whether this OS has the shared-memory transport: off
// Linux it returns an error naming the OS, which is errors.ErrUnsupported
// to errors.Is. New calls it first, so callers need it only to choose
// another transport up front.
func Supported() error { return errUnsupported }
