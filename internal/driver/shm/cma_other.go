//go:build !linux

package shm

import "github.com/commtune/commtune/internal/driver"

// Single-copy reads need Linux's process_vm_readv: off Linux no peer
// offers its buffers (probeCMA says no) and the reads fail.

func publishProbe(*segment) {}

func probeCMA(*segment) (bool, string) { return false, errUnsupported.Error() }

func processVMRead(int, []byte, uint64) (int, error) { return 0, errUnsupported }

func processVMReadv(int, [][]byte, uint64) (int, error) { return 0, errUnsupported }

func processVMReadSpans(int, [][]byte, []driver.Span) (int, error) { return 0, errUnsupported }

func processVMWriteSpans(int, []driver.Span, [][]byte) (int, error) { return 0, errUnsupported }
