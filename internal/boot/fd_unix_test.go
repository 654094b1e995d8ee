//go:build unix

package boot

import (
	"net"
	"os"
	"syscall"
	"testing"
)

// socketPair returns the descriptor of one end of a new Unix socket pair,
// as a launcher hands PMI_FD to its rank, and the other end as a
// connection for the test's PMI server.
func socketPair(t *testing.T) (int, net.Conn) {
	t.Helper()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	// Close the descriptor through its *os.File: a File left to the
	// garbage collector closes its number later, by then another socket's.
	file := os.NewFile(uintptr(fds[1]), "fake-pmi")
	srv, err := net.FileConn(file)
	file.Close()
	if err != nil {
		t.Fatal(err)
	}
	return fds[0], srv
}

// dupFD returns a duplicate of f's descriptor, for code that takes a
// descriptor over and closes it.
func dupFD(t *testing.T, f *os.File) int {
	t.Helper()
	fd, err := syscall.Dup(int(f.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	return fd
}
