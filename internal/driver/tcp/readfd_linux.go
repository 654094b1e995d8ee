package tcp

import (
	"io"

	"golang.org/x/sys/unix"
)

// readFrames feeds the decoder each time the netpoller reports the socket
// readable, until the stream ends. The decoder always reads until the
// socket would block, so whoever holds the read lock drains what the
// readiness event announced. The reader goroutine steps aside when a
// goroutine is polling the rail (that goroutine should receive its message
// on its own processor) or holds the lock (sleeping on the lock would make
// every unlock wake a thread): it marks the rail contended and goes back to
// the netpoller, and the poller drains once more after it unlocks or stops
// polling. The mark is published before the checks, and pollers check it
// after unlocking or stopping, so one of the two always drains.
func (r *rail) readFrames() error {
	var err error
	rerr := r.raw.Read(func(fd uintptr) bool {
		r.contended.Store(true)
		if r.polling.Load() > 0 || !r.rmu.TryLock() {
			return false
		}
		r.contended.Store(false)
		_, err = r.dec.run(fdSource(fd))
		r.rmu.Unlock()
		return err != nil
	})
	if err == nil {
		// Woken without reading: a poller met the end of the stream (Poll
		// set a past deadline), or the connection was closed under us.
		r.rmu.Lock()
		err = r.dec.err
		r.rmu.Unlock()
		if err == nil {
			err = rerr
		}
	}
	return err
}

// pollLocked reads what is available without waiting.
func (r *rail) pollLocked() (bool, error) {
	var progress bool
	var err error
	if cerr := r.raw.Control(func(fd uintptr) { progress, err = r.dec.run(fdSource(fd)) }); cerr != nil {
		return false, nil // closed: the reader goroutine reports it
	}
	return progress, err
}

// fdSource is a non-blocking read(2) on fd.
func fdSource(fd uintptr) source {
	return func(p []byte) (int, error) {
		for {
			n, err := unix.Read(int(fd), p)
			switch {
			case n > 0:
				return n, nil
			case err == unix.EINTR:
				continue
			case err == unix.EAGAIN:
				return 0, errWouldBlock
			case err != nil:
				return 0, err
			}
			return 0, io.EOF
		}
	}
}
