package shm

import "github.com/commtune/commtune/internal/driver"

// The vmsplice method's completion bookkeeping; the system calls that move
// the bytes are in pipe_linux.go.

// pipeAcked counts pipe bytes the peer read; when all are in, that half of
// the frame's completion is done. The bytes are owed before they enter the
// pipe, so acknowledging more than is owed breaks the protocol.
func (rl *rail) pipeAcked(n uint64) error {
	if owed := rl.pipeOwed.Load(); n == 0 || n > uint64(owed) {
		return driver.ProtocolError("shm pipe acknowledgment of %d bytes, %d owed", n, owed)
	}
	if rl.pipeOwed.Add(-int64(n)) == 0 {
		rl.pipeStep()
	}
	return nil
}

// pipeStep records one of the two events a vmsplice frame waits for (all
// spliced, all acknowledged); the second completes the frame.
func (rl *rail) pipeStep() {
	if rl.pipeSteps.Add(-1) != 0 {
		return
	}
	rl.wmu.Lock()
	busy := rl.busy
	rl.rest, rl.busy = putState{}, false
	rl.wmu.Unlock()
	if busy {
		rl.t.cfg.Handler.Idle(rl, nil)
	}
}
