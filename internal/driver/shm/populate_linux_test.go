package shm

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestPopulate gives pages of a shared file mapping their memory, by
// madvise and by touching them (the way on kernels before 5.14), keeping
// what they hold; a mapping past the file's end is an error, not a crash.
func TestPopulate(t *testing.T) {
	f, err := os.OpenFile(filepath.Join(shmDir(t), "pages"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	const size = 8 * pageSize
	if err := f.Truncate(size / 2); err != nil { // the second half lies past the end
		t.Fatal(err)
	}
	mem, err := unix.Mmap(int(f.Fd()), 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(mem)
	mem[pageSize] = 42
	for _, tc := range []struct {
		name    string
		fill    func([]byte) error
		lo, hi  int
		wantErr bool
	}{
		{"madvise", populate, 0, size / 2, false},
		{"touch", touchPages, 0, size / 2, false},
		{"touch past the end", touchPages, size / 2, size, true},
		{"madvise past the end", populate, size / 2, size, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.fill(mem[tc.lo:tc.hi])
			if (err != nil) != tc.wantErr {
				t.Fatalf("err %v, want an error: %v", err, tc.wantErr)
			}
			if mem[pageSize] != 42 {
				t.Fatalf("a page's byte changed to %d", mem[pageSize])
			}
		})
	}
}
