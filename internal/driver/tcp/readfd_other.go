//go:build !linux

package tcp

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
