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
	pids  []int
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
		w.pids = append(w.pids, pid)
	}
	go w.run()
	return w, nil
}

func (w *watcher) run() {
	defer close(w.done)
	for {
		for i := range w.fds {
			w.fds[i].Revents = 0
		}
		_, err := unix.Poll(w.fds, -1)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return
		}
		if w.fds[0].Revents != 0 {
			return // closing
		}
		for i := 1; i < len(w.fds); i++ {
			if w.fds[i].Revents != 0 && w.exited(i) {
				unix.Close(int(w.fds[i].Fd))
				w.fds[i].Events, w.fds[i].Fd = 0, -1 // once per peer
				w.gone(w.ranks[i-1])
			}
		}
	}
}

// exited tells whether poll's flags for the pidfd at w.fds[i] say its
// process ended: readable (POLLIN) once the whole process has exited,
// hung up (POLLHUP, newer kernels) once it is reaped. A descriptor found
// invalid (POLLNVAL: closed by mistake elsewhere in the process, a defect,
// not a death) is opened again from the pid, and the peer is gone if that
// finds no process. No other flag reports a death: a live peer is never
// reported on a wake-up that was not its exit.
func (w *watcher) exited(i int) bool {
	ev := w.fds[i].Revents
	if ev&(unix.POLLIN|unix.POLLHUP) != 0 {
		return true
	}
	if ev&unix.POLLNVAL == 0 {
		return false
	}
	fd, err := unix.PidfdOpen(w.pids[i-1], 0)
	switch {
	case err == unix.ESRCH:
		return true
	case err != nil:
		w.fds[i].Events, w.fds[i].Fd = 0, -1 // cannot watch it any more; its records still tell a goodbye
	default:
		w.fds[i].Fd = int32(fd)
	}
	return false
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
