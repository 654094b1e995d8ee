//go:build amd64 || arm64

package observe

import "unsafe"

// callerFP returns the frame pointer of the function calling it
// (fp_amd64.s, fp_arm64.s).
func callerFP() unsafe.Pointer

// callSite fills pcs with the return addresses of the frames above the
// caller's caller, by walking the frame pointers Go keeps on these
// processors: each frame holds its caller's frame pointer, and above it
// the return address. It costs a few loads where runtime.Callers, which
// unwinds from tables, costs about 150 ns: the difference between a
// timeline that slows a small collective by a tenth and one that doubles
// it. The runtime's execution tracer unwinds the same way.
//
//go:nosplit
func callSite(pcs *[sitePCs]uintptr) {
	fp := callerFP() // callSite's own frame
	for i := 0; i < sitePCs+1 && fp != nil; i++ {
		ret := *(*uintptr)(unsafe.Add(fp, unsafe.Sizeof(fp)))
		fp = *(*unsafe.Pointer)(fp)
		if i > 0 { // the first return address is into callSite's caller
			pcs[i-1] = ret
		}
	}
}
