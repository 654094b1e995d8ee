//go:build !linux

package shm

import "time"

// Off Linux New refuses to run (Supported), so nothing rings or sleeps on a
// bell; these keep the package building.

type bell struct{}

func makeBell(string) (*bell, error)     { return nil, errUnsupported }
func openBellWriter(string) (int, error) { return -1, errUnsupported }
func ringBell(int)                       {}
func (b *bell) sleep(d time.Duration)    { time.Sleep(d) }
func (b *bell) ring()                    {}
func (b *bell) close()                   {}
func closeBellWriter(int)                {}
