package tcp

import "fmt"

// writeLoop is the rail's writer goroutine: it finishes frames that did not
// fit in the socket buffer, with blocking semantics (net.Buffers uses
// writev and parks on the netpoller), then reports Idle. It ends the
// connection's write side when asked, after any frame in flight, and exits
// when jobs is closed.
func (r *rail) writeLoop() {
	defer r.t.wg.Done()
	defer close(r.wdone)
	for j := range r.jobs {
		switch j {
		case jobFrame:
			// If Flush took the frame, writePending returns only once
			// Flush is done with it (both hold wio while writing), so a
			// later Bye cannot cut into it.
			r.writePending()
		case jobBye:
			if _, err := r.nc.Write(byeFrame[:]); err == nil {
				r.nc.CloseWrite()
			}
		case jobShut:
			r.nc.CloseWrite()
		}
	}
}

// writePending writes the rest of the pending frame with blocking
// semantics (net.Buffers uses writev and parks on the netpoller) and
// reports Idle, unless another goroutine claimed it first; it says whether
// it did. It holds wio throughout, so it returns only after a concurrent
// writer of the same frame is done.
func (r *rail) writePending() bool {
	r.wio.Lock()
	defer r.wio.Unlock()
	if !r.claim.CompareAndSwap(false, true) {
		return false
	}
	r.pending = r.pendingBuf
	_, err := r.pending.WriteTo(r.nc)
	clear(r.pendingBuf) // do not pin the caller's buffers
	r.pendingBuf = r.pendingBuf[:0]
	if err != nil {
		r.fail(err) // the reader reports the peer lost with this cause
		err = fmt.Errorf("tcp rail %d: %w", r.index, err)
	}
	r.wmu.Lock()
	r.busy = false
	r.wmu.Unlock()
	r.t.h.Idle(r, err)
	return true
}

// Flush writes the rest of a frame Post could not finish, in the calling
// goroutine, if the writer goroutine has not started on it; it implements
// driver.Flusher. A goroutine that would otherwise park until the frame is
// out writes it itself: the bytes then go out from the processor that
// holds them, and no thread is woken twice.
func (r *rail) Flush() bool {
	r.wmu.Lock()
	busy := r.busy && !r.claim.Load()
	r.wmu.Unlock()
	return busy && r.writePending()
}
