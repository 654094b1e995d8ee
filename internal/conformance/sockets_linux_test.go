package conformance

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// shutdownSocketsTo shuts down this process's TCP sockets whose remote
// address is ip (IPv4): the connections of one rail.
func shutdownSocketsTo(ip string) error {
	inodes, err := socketInodes(ip)
	if err != nil {
		return err
	}
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return err
	}
	n := 0
	for _, e := range fds {
		link, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name()))
		if err != nil || !strings.HasPrefix(link, "socket:[") {
			continue
		}
		if inodes[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")] {
			var fd int
			fmt.Sscan(e.Name(), &fd)
			if syscall.Shutdown(fd, syscall.SHUT_RDWR) == nil {
				n++
			}
		}
	}
	if n == 0 {
		return fmt.Errorf("no socket to %s", ip)
	}
	return nil
}

// socketInodes returns the inodes of the TCP sockets in /proc/net/tcp
// whose remote address is ip.
func socketInodes(ip string) (map[string]bool, error) {
	raw, err := os.ReadFile("/proc/net/tcp")
	if err != nil {
		return nil, err
	}
	var a [4]byte
	if _, err := fmt.Sscanf(ip, "%d.%d.%d.%d", &a[0], &a[1], &a[2], &a[3]); err != nil {
		return nil, err
	}
	hex := fmt.Sprintf("%02X%02X%02X%02X:", a[3], a[2], a[1], a[0]) // little-endian
	out := map[string]bool{}
	for _, line := range strings.Split(string(raw), "\n")[1:] {
		f := strings.Fields(line)
		if len(f) > 9 && strings.HasPrefix(f[2], hex) {
			out[f[9]] = true
		}
	}
	return out, nil
}
