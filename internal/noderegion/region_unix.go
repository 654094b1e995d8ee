//go:build unix

package noderegion

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// Create makes a region of size bytes (> 0) in dir and maps it; it returns
// the file's path, for the others to Map.
func Create(dir string, size int) (path string, mem []byte, err error) {
	var id [12]byte
	if _, err := rand.Read(id[:]); err != nil {
		return "", nil, err
	}
	path = filepath.Join(dir, prefix+hex.EncodeToString(id[:]))
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", nil, fmt.Errorf("noderegion: %w", err)
	}
	defer f.Close()
	if err := f.Truncate(int64(size)); err != nil {
		os.Remove(path)
		return "", nil, fmt.Errorf("noderegion: sizing %s to %d bytes: %w", path, size, err)
	}
	mem, err = unix.Mmap(int(f.Fd()), 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		os.Remove(path)
		return "", nil, fmt.Errorf("noderegion: mapping %s: %w", path, err)
	}
	return path, mem, nil
}

// Map maps the region at path, which must hold size bytes.
func Map(path string, size int) ([]byte, error) {
	if !strings.HasPrefix(filepath.Base(path), prefix) {
		return nil, fmt.Errorf("noderegion: %q is not a region", path)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("noderegion: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("noderegion: %w", err)
	}
	if st.Size() != int64(size) {
		return nil, fmt.Errorf("noderegion: %s holds %d bytes, want %d", path, st.Size(), size)
	}
	mem, err := unix.Mmap(int(f.Fd()), 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("noderegion: mapping %s: %w", path, err)
	}
	return mem, nil
}

// Unmap unmaps mem (a mapping Create or Map returned; nil: nothing).
func Unmap(mem []byte) error {
	if mem == nil {
		return nil
	}
	return unix.Munmap(mem)
}
