package shm

import (
	"os/exec"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// startSleeper starts a child that lives until killed, and reaps it at the
// test's end.
func startSleeper(t *testing.T) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Skipf("cannot start a child process: %v", err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	return cmd
}

func TestWatcherReportsExit(t *testing.T) {
	cmd := startSleeper(t)
	gone := make(chan int, 1)
	w, err := newWatcher(map[int]int{3: cmd.Process.Pid}, func(rank int) { gone <- rank })
	if err != nil {
		t.Skipf("no pidfds here: %v", err)
	}
	defer w.close()
	select {
	case r := <-gone:
		t.Fatalf("rank %d reported gone while its process runs", r)
	case <-time.After(50 * time.Millisecond):
	}
	cmd.Process.Kill() // not reaped: a zombie has exited too
	select {
	case r := <-gone:
		if r != 3 {
			t.Fatalf("reported rank %d, want 3", r)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a killed process was not reported in 10 s")
	}
}

// TestWatcherExited checks what each of poll's flags means for a peer:
// only an exit reports it; a descriptor closed behind the watcher's back
// is opened again while the process lives.
func TestWatcherExited(t *testing.T) {
	live := startSleeper(t)
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Skipf("cannot run a child process: %v", err)
	}
	for _, tc := range []struct {
		name    string
		pid     int
		revents int16
		closed  bool // the pidfd was closed by someone else
		want    bool
	}{
		{"readable", live.Process.Pid, unix.POLLIN, false, true},
		{"hung up", live.Process.Pid, unix.POLLHUP, false, true},
		{"error flag alone", live.Process.Pid, unix.POLLERR, false, false},
		{"closed behind it, alive", live.Process.Pid, unix.POLLNVAL, true, false},
		{"closed behind it, gone", dead.Process.Pid, unix.POLLNVAL, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fd, err := unix.PidfdOpen(live.Process.Pid, 0)
			if err != nil {
				t.Skipf("no pidfds here: %v", err)
			}
			if tc.closed {
				unix.Close(fd)
			} else {
				defer unix.Close(fd)
			}
			w := &watcher{
				fds:  []unix.PollFd{{Fd: -1}, {Fd: int32(fd), Events: unix.POLLIN, Revents: tc.revents}},
				pids: []int{tc.pid},
			}
			if got := w.exited(1); got != tc.want {
				t.Fatalf("exited = %v, want %v", got, tc.want)
			}
			if tc.closed && !tc.want {
				if w.fds[1].Fd < 0 {
					t.Fatal("a live peer's closed pidfd was not opened again")
				}
				unix.Close(int(w.fds[1].Fd))
			}
		})
	}
}
