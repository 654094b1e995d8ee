// Package topo describes the machine commtune runs on: its online CPUs, the
// caches and which CPUs share each one, cores, packages and NUMA nodes, and
// the CPUs this process may run on. Intra-node transfers use it to place
// ranks and to choose a copy method by message size: DMAMin is seed 004
// §3.3's cache-size rule for when a copy's cache pollution outweighs it.
//
// Everything is read from Linux's sysfs (Read); ReadFrom reads a copy of
// that tree, which is how the tests describe machines other than this one.
// docs/topology.md lists the files read and the rule with its example.
package topo

import "errors"

var (
	// ErrNotSupported reports that this operating system has no sysfs or
	// no sched_getaffinity: topology is read on Linux only.
	ErrNotSupported = errors.New("topology is not supported on this OS (Linux only)")
	// ErrMalformed reports a sysfs file whose contents are not what the
	// kernel writes there; it is wrapped with the file's path.
	ErrMalformed = errors.New("malformed")
)
