package tcp

import (
	"errors"
	"fmt"
	"math"
	"net"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/commtune/commtune/internal/driver"
)

// errBusy is returned by a Post made before the rail reported Idle for the
// previous frame: a scheduler bug, not a network failure.
var errBusy = errors.New("Post while the previous frame is still being sent")

// job is work for a rail's writer goroutine.
type job uint8

const (
	jobFrame job = iota // write r.pending, then report Idle
	jobBye              // write a Bye and shut the write side (our Close)
	jobShut             // shut the write side (the peer said Bye)
)

// rail is one authenticated connection to one peer; it implements
// driver.Rail. Post writes inline in the caller's goroutine; what does not
// fit in the socket buffer goes to the writer goroutine; the reader
// goroutine decodes incoming frames.
type rail struct {
	t      *Transport
	p      *peer
	index  int
	nc     *net.TCPConn
	raw    syscall.RawConn
	caps   driver.Caps
	remote string

	wmu     sync.Mutex
	busy    bool // guarded by wmu: a frame is with the writer
	wclosed bool // guarded by wmu: jobs is closed, no more frames

	// Sender scratch, used by Post under wmu and then by the writer (the
	// jobs channel orders the two); never two frames at once.
	hdr        header
	out        inlineWriter
	pending    net.Buffers // what the writer is writing
	pendingBuf [][]byte    // pending's backing array, reused
	claim      atomic.Bool // the pending frame's rest has a writer (goroutine or Flush)
	wio        sync.Mutex  // held while the pending frame's rest is written
	jobs       chan job    // kicks for pending frames (kickLocked), then one final job

	rmu       sync.Mutex // guards dec: held by the reader goroutine or a poller
	dec       *decoder
	contended atomic.Bool  // the reader backed off while a poller held rmu
	polling   atomic.Int32 // goroutines polling this rail now

	rdone chan struct{} // closed when the reader exits
	wdone chan struct{} // closed when the writer exits

	failOnce sync.Once
	cause    atomic.Pointer[error] // why the connection was dropped
}

var (
	_ driver.Rail   = (*rail)(nil)
	_ driver.Poller = (*rail)(nil)
)

// newRail wraps an authenticated connection.
func newRail(t *Transport, p *peer, index int, nc *net.TCPConn, peerMax int) (*rail, error) {
	raw, err := nc.SyscallConn()
	if err != nil {
		return nil, err
	}
	r := &rail{
		t: t, p: p, index: index, nc: nc, raw: raw,
		remote: nc.RemoteAddr().String(),
		caps: driver.Caps{
			Transport: "tcp",
			Rail:      index,
			Name:      t.names[index],
			Local:     false, // the caller decides locality; a tcp rail may loop back
			MaxPacket: min(t.cfg.MaxPacket, peerMax),
			Iovec:     true,
		},
		jobs:  make(chan job, 2),
		rdone: make(chan struct{}),
		wdone: make(chan struct{}),
	}
	r.dec = newDecoder(t.h, p.rank, t.cfg.MaxPacket)
	r.dec.onBye = r.bye
	return r, nil
}

// Caps returns the rail's capabilities.
func (r *rail) Caps() driver.Caps { return r.caps }

// Peer returns the rank at the other end.
func (r *rail) Peer() int { return r.p.rank }

// Post sends f: one non-blocking writev of header and payload in the
// caller's goroutine, and whatever did not fit handed to the writer
// goroutine, which reports Idle when it is done. It never waits for the
// peer. A frame with Offload set, and a Put longer than the chunk size
// (several Put frames at consecutive offsets), go to the writer whole.
func (r *rail) Post(f *driver.Frame) (bool, error) {
	if err := r.p.err(); err != nil {
		return false, err
	}
	n := f.Len()
	switch f.Kind {
	case driver.Packet:
		if n > r.caps.MaxPacket {
			return false, fmt.Errorf("tcp rail %d: Packet of %d bytes exceeds MaxPacket %d", r.index, n, r.caps.MaxPacket)
		}
	case driver.Put:
		if f.Offset < 0 || f.Offset > math.MaxInt64-int64(n) {
			return false, fmt.Errorf("tcp rail %d: Put of %d bytes at offset %d", r.index, n, f.Offset)
		}
	default:
		return false, fmt.Errorf("tcp rail %d: unknown frame kind %d", r.index, f.Kind)
	}

	r.wmu.Lock()
	if err := r.postableLocked(); err != nil {
		r.wmu.Unlock()
		return false, err
	}
	if f.Kind == driver.Put && n > r.t.putChunk {
		r.queueChunkedLocked(f, n)
		r.wmu.Unlock()
		return false, nil
	}
	var hdr []byte
	if f.Kind == driver.Packet {
		hdr = r.hdr.packet(n, framePad(packetHeaderSize, f.Iov))
	} else {
		hdr = r.hdr.put(f.Region, f.Offset, n, framePad(putHeaderSize, f.Iov))
	}
	if f.Offload {
		// The writer goroutine copies it all into the kernel, on another
		// core, while the caller posts the next chunk of a split.
		r.queueRestLocked(0, hdr, f.Iov)
		r.wmu.Unlock()
		return false, nil
	}
	w, err := r.out.write(r.raw, hdr, f.Iov)
	if err != nil {
		r.wmu.Unlock()
		r.fail(err) // the reader reports the peer lost with this cause
		return false, fmt.Errorf("tcp rail %d: %w", r.index, err)
	}
	if w == len(hdr)+n {
		r.wmu.Unlock()
		return true, nil
	}
	r.queueRestLocked(w, hdr, f.Iov)
	r.wmu.Unlock()
	return false, nil
}

// framePad returns the pad for a frame whose header is hdrLen bytes and
// whose last iovec part is its large payload (see padFor).
func framePad(hdrLen int, iov [][]byte) int {
	if len(iov) == 0 {
		return 0
	}
	before := hdrLen
	for _, b := range iov[:len(iov)-1] {
		before += len(b)
	}
	return padFor(before, iov[len(iov)-1])
}

// postableLocked says why no frame can be posted now, or nil.
func (r *rail) postableLocked() error {
	switch {
	case r.busy:
		return fmt.Errorf("tcp rail %d: %w", r.index, errBusy)
	case r.wclosed:
		if err := r.p.err(); err != nil {
			return err
		}
		return fmt.Errorf("tcp rail %d: %w", r.index, net.ErrClosed)
	}
	return nil
}

// queueRestLocked hands the writer what the inline write left: the bytes of
// hdr and iov after the first w.
func (r *rail) queueRestLocked(w int, hdr []byte, iov [][]byte) {
	r.pendingBuf = r.pendingBuf[:0]
	skip := w
	add := func(b []byte) {
		if skip >= len(b) {
			skip -= len(b)
			return
		}
		r.pendingBuf = append(r.pendingBuf, b[skip:])
		skip = 0
	}
	add(hdr)
	for _, b := range iov {
		add(b)
	}
	r.busy = true
	r.claim.Store(false)
	r.kickLocked()
}

// queueChunkedLocked hands the writer a Put too long for one frame, as
// frames of at most putChunk bytes. Rare enough that it may allocate their
// headers.
func (r *rail) queueChunkedLocked(f *driver.Frame, n int) {
	r.pendingBuf = r.pendingBuf[:0]
	iov := f.Iov
	pos := 0 // consumed bytes of iov[0]
	for off := 0; off < n; {
		chunk := min(n-off, r.t.putChunk)
		hdr := new(header)
		r.pendingBuf = append(r.pendingBuf, hdr.put(f.Region, f.Offset+int64(off), chunk, 0))
		for need := chunk; need > 0; {
			b := iov[0][pos:]
			if len(b) > need {
				b = b[:need]
			}
			if len(b) > 0 {
				r.pendingBuf = append(r.pendingBuf, b)
			}
			need -= len(b)
			pos += len(b)
			if pos == len(iov[0]) {
				iov, pos = iov[1:], 0
			}
		}
		off += chunk
	}
	r.busy = true
	r.claim.Store(false)
	r.kickLocked()
}

// kickLocked tells the writer a frame is pending, without ever blocking:
// Post holds wmu here, and a writer finishing the frame before needs wmu
// to say so. A frame Flush wrote leaves its kick in jobs, so kicks can
// pile up; when jobs is full, a kick the writer has yet to take is
// already there, and whichever kick it takes next claims the pending frame
// (writePending's claim), so dropping this one loses nothing.
func (r *rail) kickLocked() {
	select {
	case r.jobs <- jobFrame:
	default:
	}
}

// finish asks the writer to end the connection after any frame in flight:
// with a Bye when we close, without one when the peer said Bye first. Posts
// fail from now on.
func (r *rail) finish(j job) {
	r.wmu.Lock()
	if r.wclosed {
		r.wmu.Unlock()
		return
	}
	r.wclosed = true // no Post sends to jobs from now on, and fail leaves it open
	r.wmu.Unlock()
	// Sent without wmu: jobs may be full of kicks, and the writer may need
	// wmu to end the frame it is on before it takes them.
	r.jobs <- j
	close(r.jobs)
}

// fail drops the connection because of cause (the first cause sticks):
// closing it stops the reader and any write, and the writer exits after
// reporting Idle for a frame it had.
//
// The close runs in a goroutine of its own: a close waits until no call
// holds the descriptor, and fail may run inside one — a packet that a
// waiter's poll read from this socket (raw Control) is answered on it,
// and that write finds the peer dead. Closing there waited for the poll
// to return, forever.
func (r *rail) fail(cause error) {
	r.failOnce.Do(func() {
		r.cause.Store(&cause)
		go r.nc.Close()
	})
	r.wmu.Lock()
	defer r.wmu.Unlock()
	if !r.wclosed {
		r.wclosed = true
		close(r.jobs)
	}
}

// failure returns the cause fail recorded, or nil.
func (r *rail) failure() error {
	if c := r.cause.Load(); c != nil {
		return *c
	}
	return nil
}
