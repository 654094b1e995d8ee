package shm

import (
	"fmt"
	"os"
	"time"
	"unsafe"

	"github.com/commtune/commtune/internal/driver"
	"golang.org/x/sys/unix"
)

// pipeSize is what the vmsplice pipes are grown to: the most an
// unprivileged process may ask for here (/proc/sys/fs/pipe-max-size).
const pipeSize = 1 << 20

// makePipeWriter creates the FIFO to a peer, at the first Put by
// vmsplice, and opens it for writing. Opening it read-write does not wait
// for the peer: it opens the read end when it reads the record announcing
// the first bytes (openPipeReader), and removes the name.
func makePipeWriter(path string) (*os.File, error) {
	if err := unix.Mkfifo(path, 0o600); err != nil {
		return nil, fmt.Errorf("shm: creating pipe %s: %w", path, err)
	}
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		os.Remove(path)
		return nil, fmt.Errorf("shm: opening pipe %s: %w", path, err)
	}
	unix.FcntlInt(uintptr(fd), unix.F_SETPIPE_SZ, pipeSize) // best effort: smaller pipes only cost calls
	return os.NewFile(uintptr(fd), path), nil
}

// openPipeReader opens the read end of the FIFO a peer made to us and
// removes its name: from then on only the two descriptors hold it, and a
// crash leaves nothing in the directory.
func openPipeReader(path string) (*os.File, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("shm: opening pipe %s: %w", path, err)
	}
	os.Remove(path)
	return os.NewFile(uintptr(fd), path), nil
}

// writePipe moves a Put by vmsplice (seed 004 §2.2): a record announces
// region, offset and length, then the sender's pages are spliced into the
// pipe and the receiver reads them out with one copy. The pages stay the
// sender's: the frame is done only when the receiver acknowledges.
func (rl *rail) writePipe(st *putState, block bool) (progressed, finished bool, err error) {
	if rl.pipe == nil {
		if rl.pipe, err = makePipeWriter(pipePath(rl.t.cfg.Dir, rl.t.cfg.Job, rl.t.cfg.Rank, rl.peer)); err != nil {
			return false, false, err
		}
	}
	if !st.announced {
		n := 0
		for _, b := range st.iov {
			n += len(b)
		}
		if !rl.writeRecord(func(w []byte) int {
			le.PutUint32(w, recHeader+16)
			w[4] = kindPipePut
			le.PutUint64(w[8:], st.region)
			le.PutUint64(w[16:], uint64(st.offset))
			le.PutUint64(w[24:], uint64(n))
			return recHeader + 16
		}, recHeader+16) {
			return false, false, nil
		}
		rl.pipeOwed.Add(int64(n))
		st.announced = true
		progressed = true
	}
	fd := int(rl.pipe.Fd())
	for len(st.iov) > 0 {
		var iov [16]unix.Iovec
		k := 0
		for ; k < len(iov) && k < len(st.iov); k++ {
			iov[k].Base = unsafe.SliceData(st.iov[k])
			iov[k].SetLen(len(st.iov[k]))
		}
		n, _, errno := unix.Syscall6(unix.SYS_VMSPLICE, uintptr(fd), uintptr(unsafe.Pointer(&iov[0])), uintptr(k), unix.SPLICE_F_NONBLOCK, 0, 0)
		switch {
		case errno == unix.EAGAIN:
			if !block {
				return progressed, false, nil
			}
			pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLOUT}}
			unix.Poll(pfd, 10)
			continue
		case errno == unix.EINTR:
			continue
		case errno != 0:
			return progressed, false, fmt.Errorf("shm: vmsplice to rank %d: %w", rl.peer, errno)
		}
		progressed = true
		for done := int(n); done > 0; {
			if done >= len(st.iov[0]) {
				done -= len(st.iov[0])
				st.iov = st.iov[1:]
			} else {
				st.iov[0] = st.iov[0][done:]
				done = 0
			}
		}
	}
	return progressed, true, nil
}

// readPipe receives an announced pipe Put straight into its region, then
// acknowledges it so the sender may reuse its pages.
func (rl *rail) readPipe(region, offset, n uint64) error {
	if n > 1<<40 || offset > 1<<62 {
		return driver.ProtocolError("shm pipe Put of %d bytes at %d", n, offset)
	}
	if rl.pipeIn == nil {
		f, err := openPipeReader(pipePath(rl.t.cfg.Dir, rl.t.cfg.Job, rl.peer, rl.t.cfg.Rank))
		if err != nil {
			return driver.ProtocolError("shm pipe Put from rank %d without its pipe: %v", rl.peer, err)
		}
		rl.pipeIn = f
	}
	h := rl.t.cfg.Handler
	fd := int(rl.pipeIn.Fd())
	deadline := time.Now().Add(30 * time.Second)
	total := 0 // bytes read into earlier pieces
	// The region may hand out its memory in pieces (a receive made of
	// segments): each is read straight from the pipe.
	err := driver.Place(h, rl.peer, region, int64(offset), int(n), func(dst []byte) error {
		for got := 0; got < len(dst); {
			m, err := unix.Read(fd, dst[got:])
			switch {
			case m > 0:
				got += m
			case err == unix.EAGAIN:
				if time.Now().After(deadline) || rl.lost.Load() {
					return fmt.Errorf("shm: rank %d announced %d bytes in its pipe, %d came", rl.peer, n, total+got)
				}
				pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
				unix.Poll(pfd, 10)
			case err == unix.EINTR:
			default:
				return fmt.Errorf("shm: reading rank %d's pipe: %v", rl.peer, err)
			}
		}
		total += len(dst)
		return nil
	})
	if err != nil {
		return err
	}
	// Acknowledge before completing the receive: a receiver that closes as
	// soon as its receive returns must not let its goodbye overtake the
	// acknowledgment its sender's completion waits for.
	rl.writeRecordWait(func(w []byte) int {
		le.PutUint32(w, recHeader)
		w[4] = kindPipeAck
		le.PutUint64(w[8:], n)
		return recHeader
	}, recHeader)
	h.PutDone(rl.peer, region, int64(offset), int(n))
	return nil
}
