//go:build !linux

package memcopy

import "testing"

// pin is a no-op where thread affinity is not available.
func pin(*testing.B) {}
