package rma

import (
	"context"
	"fmt"
	"time"

	"github.com/commtune/commtune/internal/coll"
	"github.com/commtune/commtune/internal/comm"
	"github.com/commtune/commtune/internal/core"
)

// agent carries out the requests of origins that reach this rank's window
// only through messages. It is a goroutine of its own, so a target busy
// in its program still serves them (passive-target progress, doc.go).
// Requests from one origin are served in the order sent (MPI's
// non-overtaking rule on the window's request context), so a flush or
// unlock answered means every earlier request of that origin is done.
type agent struct {
	w      *Window
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}

	held    map[int]LockKind // the lock each origin holds through this agent
	waiting []lockWait       // lock requests not granted yet, oldest first
	errs    map[int]error    // an origin's refused put or accumulate, told at its next flush or unlock
}

// lockWait is a lock request waiting for the lock to be free.
type lockWait struct {
	origin, tag int
	kind        LockKind
}

func startAgent(w *Window) *agent {
	ctx, cancel := context.WithCancel(context.Background())
	a := &agent{w: w, ctx: ctx, cancel: cancel, done: make(chan struct{}), held: map[int]LockKind{}, errs: map[int]error{}}
	go a.run()
	return a
}

// stop ends the agent and waits for it.
func (a *agent) stop() {
	a.cancel()
	<-a.done
}

func (a *agent) run() {
	defer close(a.done)
	req := a.w.cfg.Req
	for a.ctx.Err() == nil {
		// A receive that waits as every receive does: polling the rails
		// first, then parked with the rails told to wake it.
		r, err := req.IrecvAlloc(comm.AnySource, comm.AnyTag)
		if err != nil {
			return // the window's communicator is closed
		}
		var st core.Status
		var b backoff
		for {
			var ok bool
			st, ok, err = r.WaitFor(a.ctx, a.retry(&b))
			if ok || err != nil {
				break
			}
			// A holder that reaches this window in place (this rank, or
			// a process of its node) releases the lock with no message:
			// look again between waits.
			a.grant()
		}
		if err != nil {
			if a.ctx.Err() != nil && !r.Cancel() {
				r.Wait(context.Background()) // matched as the window ended
			}
			continue // the window's end, or a lost peer: the others are still served
		}
		w := a.w
		w.memSync.Add(1) // after this rank's own accesses (Sync)
		a.handle(req.Status(st).Source, r.Buffer())
		w.memSync.Add(1) // before this rank's next (Sync)
	}
}

// retry is how long the agent waits for a request before it tries again
// to grant the lock to waiting ones: no limit when none waits, else from
// 20 µs growing to 1 ms.
func (a *agent) retry(b *backoff) time.Duration {
	if len(a.waiting) == 0 {
		return 0
	}
	b.n++
	return min(time.Duration(b.n)*20*time.Microsecond, time.Millisecond)
}

// handle carries out one request of origin.
func (a *agent) handle(origin int, msg []byte) {
	w := a.w
	local, h, elem := w.cfg.Local, w.cfg.Header, w.cfg.Elem
	q, data, err := decodeRequest(msg, len(local), elem)
	replies := q.kind == kGet || q.kind == kGetAcc || q.kind == kCAS || q.kind == kLock || q.kind == kUnlock || q.kind == kFlush
	if err != nil {
		if replies && len(msg) >= headerLen {
			a.reply(origin, q.tag, nil, err)
		} else {
			a.errs[origin] = err
		}
		return
	}
	var red coll.Reducer
	if q.kind == kAcc || q.kind == kGetAcc {
		if red, err = Kernel(q.op, w.cfg.Kind); err != nil {
			err = fmt.Errorf("rma: %s: %w", kindNames[q.kind], err)
			if q.kind == kGetAcc {
				a.reply(origin, q.tag, nil, err)
			} else {
				a.errs[origin] = err
			}
			return
		}
	}
	mem := local[q.offset:]
	switch q.kind {
	case kPut:
		copy(mem, data)
	case kPutData:
		// The data follows at once: the origin sent it right after.
		st, err := w.cfg.Rep.Recv(a.ctx, mem[:q.length], origin, q.tag)
		if err == nil && st.Count != q.length {
			err = fmt.Errorf("rma: rank %d's put of %d bytes brought %d", origin, q.length, st.Count)
		}
		if err != nil {
			a.errs[origin] = err
		}
	case kAcc:
		accumulate(local, mem, data, nil, elem, localOp(q.op, w.cfg.Kind), red, h)
	case kGet:
		a.reply(origin, q.tag, mem[:q.length], nil)
	case kGetAcc:
		result := make([]byte, q.length)
		accumulate(local, mem, data, result, elem, localOp(q.op, w.cfg.Kind), red, h)
		a.reply(origin, q.tag, result, nil)
	case kCAS:
		result := make([]byte, elem)
		compareAndSwap(local, mem, data[:elem], data[elem:], result, h)
		a.reply(origin, q.tag, result, nil)
	case kLock:
		if a.held[origin] != 0 {
			a.reply(origin, q.tag, nil, fmt.Errorf("rma: rank %d locks a window it holds locked", origin))
			return
		}
		a.waiting = append(a.waiting, lockWait{origin, q.tag, q.lock})
		a.grant()
	case kUnlock:
		kind := a.held[origin]
		if kind == 0 {
			a.reply(origin, q.tag, nil, fmt.Errorf("rma: rank %d unlocks a window it has not locked", origin))
			return
		}
		delete(a.held, origin)
		h.unlock(kind)
		a.reply(origin, q.tag, nil, a.takeErr(origin))
		a.grant()
	case kFlush:
		a.reply(origin, q.tag, nil, a.takeErr(origin))
	}
}

// grant gives the lock to waiting requests in order while it is free for
// them (the oldest first, so an exclusive request is not starved by
// shared ones arriving after it).
func (a *agent) grant() {
	h := a.w.cfg.Header
	for len(a.waiting) > 0 {
		l := a.waiting[0]
		if !h.tryLock(l.kind) {
			return
		}
		a.waiting = a.waiting[1:]
		a.held[l.origin] = l.kind
		a.reply(l.origin, l.tag, nil, nil)
	}
}

func (a *agent) takeErr(origin int) error {
	err := a.errs[origin]
	delete(a.errs, origin)
	return err
}

func (a *agent) reply(origin, tag int, data []byte, err error) {
	// A reply that cannot be sent (the origin is lost, or the window is
	// being freed) has nobody left to tell.
	_ = replyTo(a.ctx, a.w.cfg.Rep, origin, tag, data, err)
}
