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
		case jobBye:
			if _, err := r.nc.Write(byeFrame[:]); err == nil {
				r.nc.CloseWrite()
			}
		case jobShut:
			r.nc.CloseWrite()
		}
	}
}
