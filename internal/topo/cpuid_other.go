//go:build !(linux && amd64)

package topo

import "errors"

// queryCPUID is available on Linux on amd64 only: elsewhere caches come
// from sysfs alone.
func queryCPUID([]int) ([]cpuidCPU, error) {
	return nil, errors.New("CPUID is read on x86-64 Linux only")
}
