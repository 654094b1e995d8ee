//go:build !amd64 && !arm64

package observe

import "runtime"

// callSite fills pcs with the return addresses of the frames above the
// caller's caller.
func callSite(pcs *[sitePCs]uintptr) { runtime.Callers(3, pcs[:]) }
