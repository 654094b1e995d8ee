//go:build !unix

package noderegion

import "errors"

// errUnsupported is what every call returns where no memory file system
// and mmap exist.
var errUnsupported = errors.New("noderegion: memory shared between processes needs a Unix system (mmap)")

// Create is unsupported here.
func Create(dir string, size int) (path string, mem []byte, err error) {
	return "", nil, errUnsupported
}

// Map is unsupported here.
func Map(path string, size int) ([]byte, error) { return nil, errUnsupported }

// Unmap is unsupported here; nothing was mapped.
func Unmap(mem []byte) error { return nil }
