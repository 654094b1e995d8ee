//go:build !linux

package shm

import "os"

// The vmsplice method needs Linux's vmsplice and pipe sizing: off Linux
// there are no pipes, so rails offer only the copy methods.

func makePipeWriter(string) (*os.File, error) { return nil, errUnsupported }

func openPipeReader(string) (*os.File, error) { return nil, errUnsupported }

func (rl *rail) writePipe(*putState, bool) (progressed, finished bool, err error) {
	return false, false, errUnsupported
}

func (rl *rail) readPipe(region, offset, n uint64) error { return errUnsupported }
