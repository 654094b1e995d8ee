//go:build !linux

package shm

import "os"

// Segments are files on Linux's tmpfs, mapped shared: off Linux none is
// created or mapped.

func allocate(*os.File, int) error { return errUnsupported }

func mapSegment(*os.File, int) ([]byte, error) { return nil, errUnsupported }

func unmapMem([]byte) error { return errUnsupported }

func populate([]byte) error { return errUnsupported }

func mapIn([]byte) {}
