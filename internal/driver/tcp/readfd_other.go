//go:build !linux

package tcp

import "io"

// readFrames feeds the decoder with blocking reads; without non-blocking
// reads the reader goroutine keeps the read lock and Poll never runs.
func (r *rail) readFrames() error {
	r.rmu.Lock()
	defer r.rmu.Unlock()
	for {
		if _, err := r.dec.run(readerSource(r.nc)); err != nil {
			return err
		}
	}
}

func (r *rail) pollLocked() (bool, error) { return false, nil }

// readerSource adapts an io.Reader  to a source.
func readerSource(r io.Reader) source {
	return func(p []byte) (int, error) {
		n, err := r.Read(p)
		if n > 0 {
			return n, nil
		}
		if err == nil {
			return 0, errWouldBlock
		}
		return 0, err
	}
}
