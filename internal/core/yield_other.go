//go:build !linux

package core

import "runtime"

// osYield yields to the Go scheduler only where sched_yield is not used.
func osYield() { runtime.Gosched() }
