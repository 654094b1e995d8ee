//go:build !unix

package boot

import (
	"net"
	"os"
	"runtime"
	"testing"
)

// socketPair skips the test: PMI_FD names an inherited Unix descriptor,
// which this OS does not have.
func socketPair(t *testing.T) (int, net.Conn) {
	t.Helper()
	t.Skipf("PMI over an inherited descriptor (PMI_FD) needs Unix, not %s", runtime.GOOS)
	return -1, nil
}

// dupFD skips the test, as socketPair does.
func dupFD(t *testing.T, f *os.File) int {
	t.Helper()
	t.Skipf("PMI over an inherited descriptor (PMI_FD) needs Unix, not %s", runtime.GOOS)
	return -1
}
