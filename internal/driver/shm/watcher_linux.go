package shm

import (
	"fmt"
	"sync"

	"golang.org/x/sys/unix"
)

// watcher notices local peers whose process ended: a pidfd becomes
// readable when its process exits (Linux 5.3+), with no polling and no
// confusion with a reused pid. A local peer has no socket whose end would
// tell us.
type watcher struct {
	wake  int // eventfd: Close writes it
	fds   []unix.PollFd
	ranks []int
	gone  func(rank int)
	done  chan struct{}
	once  sync.Once
}

func newWatcher(pids map[int]int, gone func(rank int)) (*watcher, error) {
	efd, err := unix.Eventfd(0, unix.EFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("shm: eventfd: %w", err)
	}
	w := &watcher{wake: efd, gone: gone, done: make(chan struct{})}
	w.fds = append(w.fds, unix.PollFd{Fd: int32(efd), Events: unix.POLLIN})
	for rank, pid := range pids {
		fd, err := unix.PidfdOpen(pid, 0)
		if err != nil {
			w.release()
			return nil, fmt.Errorf("shm: watching rank %d (pid %d): %w", rank, pid, err)
		}
		w.fds = append(w.fds, unix.PollFd{Fd: int32(fd), Events: unix.POLLIN})
		w.ranks = append(w.ranks, rank)
	}
	go w.run()
	return w, nil
}

func (w *watcher) run() {
	defer close(w.done)
	for {
		_, err := unix.Poll(w.fds, -1)
		if err != nil && err != unix.EINTR {
			return
		}
		if w.fds[0].Revents != 0 {
			return // closing
		}
		for i := 1; i < len(w.fds); i++ {
			if w.fds[i].Revents != 0 {
				unix.Close(int(w.fds[i].Fd))
				w.fds[i].Events, w.fds[i].Fd = 0, -1 // once per peer
				w.gone(w.ranks[i-1])
			}
		}
	}
}

func (w *watcher) close() {
	w.once.Do(func() {
		var one = [8]byte{1}
		unix.Write(w.wake, one[:])
		<-w.done
		w.release()
	})
}

func (w *watcher) release() {
	for _, p := range w.fds {
		if p.Fd >= 0 {
			unix.Close(int(p.Fd))
		}
	}
}
