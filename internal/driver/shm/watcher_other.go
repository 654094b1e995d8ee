//go:build !linux

package shm

// watcher would notice local peers whose process ended; it needs Linux's
// pidfds, and New refuses to run without them.
type watcher struct{}

func newWatcher(map[int]int, func(rank int)) (*watcher, error) { return nil, errUnsupported }

func (w *watcher) close() {}
