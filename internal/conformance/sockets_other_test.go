//go:build !linux

package conformance

import (
	"fmt"
	"runtime"
)

// shutdownSocketsTo breaks a rail by its sockets, which needs Linux's
// /proc (and the rail tests need network namespaces).
func shutdownSocketsTo(ip string) error {
	return fmt.Errorf("breaking the sockets to %s: not supported on %s", ip, runtime.GOOS)
}
