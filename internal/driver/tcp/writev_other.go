//go:build !linux

package tcp

import "syscall"

// inlineWriter is the portable stand-in for the Linux inline writev: it
// writes nothing, so every frame goes to the rail's writer goroutine. Frames
// still leave in order and Post still never blocks; only the latency of the
// inline fast path is lost on this OS.
type inlineWriter struct{}

// write writes nothing and reports no error.
func (w *inlineWriter) write(raw syscall.RawConn, hdr []byte, bufs [][]byte) (int, error) {
	return 0, nil
}
