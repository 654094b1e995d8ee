package shm

import (
	"fmt"
	"os"
	"runtime/debug"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// allocate gives f's first size bytes their pages now (fallocate(2)).
func allocate(f *os.File, size int) error {
	return unix.Fallocate(int(f.Fd()), 0, 0, int64(size))
}

// mapSegment maps size bytes of f shared. No page is mapped yet: a
// segment holds a ring per local sender, and only the rings of pairs
// that talk are ever touched (populate).
func mapSegment(f *os.File, size int) ([]byte, error) {
	return unix.Mmap(int(f.Fd()), 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
}

// unmapMem undoes mapSegment.
func unmapMem(mem []byte) error { return unix.Munmap(mem) }

// populate gives mem's pages their memory and maps them for writing now
// (MADV_POPULATE_WRITE, Linux 5.14): a full /dev/shm is then an error
// here, with a name, instead of a SIGBUS at some later write. On older
// kernels each page is written once with faults turned into panics.
func populate(mem []byte) error {
	if len(mem) == 0 {
		return nil
	}
	err := unix.Madvise(mem, unix.MADV_POPULATE_WRITE)
	if err != unix.EINVAL {
		return err
	}
	return touchPages(mem)
}

// touchPages writes each page of mem once, without changing it, with
// faults turned into an error: populate before Linux 5.14.
func touchPages(mem []byte) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("no memory behind the mapping: %v", r)
		}
	}()
	for i := 0; i < len(mem); i += pageSize {
		// Adding 0 writes without changing what a peer may have put there.
		atomic.AddUint32((*uint32)(unsafe.Pointer(&mem[i])), 0)
	}
	return nil
}

// mapIn maps mem's pages, which have their memory already, for reading
// (MADV_POPULATE_READ): the consumer's view of what a producer filled,
// mapped at once rather than at a fault per page. Best effort: a page it
// misses is mapped at its first touch.
func mapIn(mem []byte) {
	if len(mem) > 0 {
		unix.Madvise(mem, unix.MADV_POPULATE_READ)
	}
}
