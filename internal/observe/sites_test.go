package observe

import (
	"runtime"
	"strings"
	"testing"
)

//go:noinline
func siteOfCaller() (pcs [sitePCs]uintptr) {
	callSite(&pcs)
	return pcs
}

//go:noinline
func siteTwoDown() [sitePCs]uintptr { return siteOfCaller() }

// TestCallSite: callSite's first address is in the caller of the function
// calling it, and the rest climb from there, as runtime.Callers gives them.
func TestCallSite(t *testing.T) {
	pcs := siteTwoDown()
	var names []string
	frames := runtime.CallersFrames(pcs[:])
	for {
		f, more := frames.Next()
		names = append(names, f.Function)
		if !more {
			break
		}
	}
	if len(names) < 2 || !strings.HasSuffix(names[0], ".siteTwoDown") || !strings.HasSuffix(names[1], ".TestCallSite") {
		t.Fatalf("frames %v: want siteTwoDown, then TestCallSite", names)
	}
	// This package is the library's: the site is the first frame above it.
	if s := site(pcs); !strings.Contains(s, "testing.tRunner") {
		t.Fatalf("site %q: want the first frame outside the library, testing.tRunner", s)
	}
}
