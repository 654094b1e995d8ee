package shm

import (
	"os"

	"golang.org/x/sys/unix"
)

// allocate gives f's first size bytes their pages now (fallocate(2)).
func allocate(f *os.File, size int) error {
	return unix.Fallocate(int(f.Fd()), 0, 0, int64(size))
}

// mapSegment maps size bytes of f shared, with their page-table entries
// filled in now (MAP_POPULATE): each process that maps a segment would
// otherwise fault on each page at its first touch.
func mapSegment(f *os.File, size int) ([]byte, error) {
	return unix.Mmap(int(f.Fd()), 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
}

// unmapMem undoes mapSegment.
func unmapMem(mem []byte) error { return unix.Munmap(mem) }
