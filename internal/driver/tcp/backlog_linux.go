package tcp

import "golang.org/x/sys/unix"

// Backlog returns the bytes written to the connection that the peer has
// not acknowledged yet (SIOCOUTQ): a frame the rail reported done may
// still be this far from arriving, since the kernel took it into its send
// buffer. A split predicts the rail's release and learns its speed from
// it (driver.Backlogger).
func (r *rail) Backlog() int {
	n := 0
	r.raw.Control(func(fd uintptr) {
		if v, err := unix.IoctlGetInt(int(fd), unix.SIOCOUTQ); err == nil {
			n = v
		}
	})
	return n
}
