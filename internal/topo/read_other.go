//go:build !linux

package topo

// Read reads this machine's topology; only Linux has sysfs, so elsewhere
// it returns ErrNotSupported. ReadFrom works everywhere.
func Read() (*Topology, error) { return nil, ErrNotSupported }

// Allowed returns the CPUs this process may run on; it needs Linux's
// sched_getaffinity and returns ErrNotSupported elsewhere.
func Allowed() ([]int, error) { return nil, ErrNotSupported }
