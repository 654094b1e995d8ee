//go:build linux

package tcp

import (
	"os"
	"runtime"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// iovMax is the kernel's limit on iovec entries per writev (UIO_MAXIOV);
// entries past it go to the rail's writer.
const iovMax = 1024

// inlineWriter makes one non-blocking writev attempt of a frame in the
// caller's goroutine. It owns its iovec array so that a Post on the fast
// path allocates nothing (unix.Writev would allocate one per call), and it
// passes a method value made once to RawConn.Write for the same reason: a
// fresh closure handed to an interface method escapes to the heap.
type inlineWriter struct {
	iov   []unix.Iovec
	n     int
	errno unix.Errno
	fn    func(fd uintptr) bool
}

// write tries to write hdr followed by bufs once, without waiting for the
// socket to drain. It returns how many bytes left (possibly 0 when the
// socket buffer is full); an error means the connection is unusable.
func (w *inlineWriter) write(raw syscall.RawConn, hdr []byte, bufs [][]byte) (int, error) {
	if w.fn == nil {
		w.fn = w.writev
	}
	w.iov = appendIovec(w.iov[:0], hdr)
	for _, b := range bufs {
		if len(w.iov) == iovMax {
			break
		}
		w.iov = appendIovec(w.iov, b)
	}
	w.n, w.errno = 0, 0
	err := raw.Write(w.fn)
	// The iovecs hold the only references the kernel used; keep the
	// buffers alive across the system call, then drop the references so the
	// rail does not pin the caller's memory until the next Post.
	runtime.KeepAlive(hdr)
	runtime.KeepAlive(bufs)
	clear(w.iov)
	switch {
	case err != nil:
		return 0, err
	case w.errno == 0:
		return w.n, nil
	case w.errno == unix.EAGAIN:
		return 0, nil // socket buffer full: the writer takes it all
	default:
		return 0, os.NewSyscallError("writev", w.errno)
	}
}

// writev is the RawConn.Write callback: one attempt (retrying only an
// interrupted call), and true so that RawConn never parks the goroutine
// waiting for the socket to become writable.
func (w *inlineWriter) writev(fd uintptr) bool {
	for {
		n, _, errno := unix.Syscall(unix.SYS_WRITEV, fd, uintptr(unsafe.Pointer(&w.iov[0])), uintptr(len(w.iov)))
		if errno == unix.EINTR {
			continue
		}
		w.n, w.errno = int(n), errno
		return true
	}
}

// appendIovec appends an iovec for b, skipping empty buffers.
func appendIovec(iov []unix.Iovec, b []byte) []unix.Iovec {
	if len(b) == 0 {
		return iov
	}
	v := unix.Iovec{Base: &b[0]}
	v.SetLen(len(b))
	return append(iov, v)
}
