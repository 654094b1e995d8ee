package core

import (
	"context"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/commtune/commtune/internal/driver"
	"github.com/commtune/commtune/internal/sched"
)

// AnySource and AnyTag match any sender and any tag in a receive or probe.
const (
	AnySource = -1
	AnyTag    = -1
)

// Status describes a received (or probed) message.
type Status struct {
	Source int // world rank of the sender
	Tag    int
	Count  int // bytes received (probe: bytes in the message)
}

type opKind uint8

const (
	opSend opKind = iota + 1
	opRecv
	opPut // a put into a region a peer exposed (Engine.PutV): matched like a receive
)

// protocol is how a send travels.
type protocol uint8

const (
	protoEagerCopy protocol = iota + 1
	protoEagerInline
	protoEagerIovec
	protoRendezvous
	protoPull // rendezvous whose receiver reads the data in place (RTS-pull)
)

// eager reports whether a send of protocol p carries its data in its one
// packet.
func (p protocol) eager() bool {
	return p == protoEagerCopy || p == protoEagerInline || p == protoEagerIovec
}

// Request is a pending send or receive. It completes exactly once; Done's
// channel is closed then.
type Request struct {
	e    *Engine
	op   opKind
	c    *matchCtx
	peer int // send: destination; receive: source or AnySource
	tag  int
	buf  []byte
	id   uint64
	// A vector request's message is segs' concatenation (buf is unused):
	// vec says so even for an empty list; size is the total length.
	vec  bool
	segs [][]byte
	size int
	// wantPull: the sender asks its receiver to read buf in place
	// (IsendPulled).
	wantPull bool
	// sync: a synchronous send (Issend), complete only once its receive
	// has matched: it announces itself at every size, as a rendezvous
	// send does, and completes on the receiver's answer.
	sync bool

	// state is where r is in its protocol (state.go): it moves only by
	// r.move, under e.mu. The flags below are not protocol state and vary
	// independently of it: temp and released are the pooled request's
	// own lifecycle (released only once complete, recycled once no packet
	// is in flight); pokeDue is owed to a waiter, not to the protocol (the
	// state moves on while the poke is still owed); pinned says whether
	// pin holds buf; moving is read without the lock by a spinning waiter,
	// and for a pulled send depends on its size.
	state    reqState
	done     chan struct{} // Done's: made only for a caller that asks
	finished atomic.Bool   // set when r completes; what a spinning waiter watches
	// A parked waiter (parked, under e.mu) sleeps on wake, which r's
	// completion signals and so does a rendezvous match of a receive
	// (come and take the data). wake and timer (a WaitFor's limit) stay
	// with the pooled request from one use to the next: a wait that parks
	// then allocates nothing.
	wake   chan struct{}
	timer  *time.Timer
	parked bool
	status Status
	err    error

	// send side
	proto      protocol
	pkt        sched.Packet // eager or RTS; never reused for bulk (they may overlap)
	bulk       sched.Packet // rendezvous data
	hdr        [maxHeaderLen]byte
	copyBuf    *[]byte // pooled eager-copy packet
	temp       bool    // pooled: the caller waits at once and hands it back (Release)
	sentNow    bool    // temp send written at once by Scheduler.SendNow: never shared
	released   bool    // Release was called: recycle once no packet is in flight
	inflight   int     // packets submitted and not yet reported Sent (under e.mu)
	pokeDue    bool    // a rendezvous matched before the waiter parked
	small      [smallEager]byte
	bulkMethod driver.Method // how a rail moves the data
	pin        runtime.Pinner
	pinned     bool
	moving     atomic.Bool // rendezvous data is with the rails: nothing to poll for
	ctxID      uint64      // rendezvous send, exposure: the context; pull: with the sequence number of the RTS-pull,
	seq        uint32      // which a withdraw names
	revoked    bool        // withdrawn because its communicator was revoked: it ends with ErrRevoked

	// receive side
	prev, next *Request // posted list
	expect     int      // rendezvous: bytes accepted
	got        int      // rendezvous: bytes landed
	msgLen     int      // message size announced by the sender
	sendID     uint64   // rendezvous: the sender's request id
	alloc      bool     // receive: buf is made when a message matches, of its size (IrecvAlloc)
	// reportSince, when not 0, is when a rendezvous receive sent its CTS
	// (nanotime): its sender asked to hear when the data landed.
	reportSince int64
	src         int // rendezvous: the matched sender

	// vector receive: where the rendezvous data's last Region piece was
	// found (under e.mu)
	cursor segCursor
}

// length returns the size of r's message (send) or room (receive).
func (r *Request) length() int {
	if r.vec {
		return r.size
	}
	return len(r.buf)
}

// Done returns a channel closed when the request completes.
func (r *Request) Done() <-chan struct{} {
	r.e.mu.Lock()
	defer r.e.mu.Unlock()
	if r.done == nil {
		r.done = make(chan struct{})
		if r.state.over() {
			close(r.done)
		}
	}
	return r.done
}

// park readies r for a waiter to sleep on r.wake: it reports done when r
// is complete already, and poked when a rendezvous matched since the
// last look (the waiter then takes the data itself); otherwise r is
// marked parked, and either event signals wake.
func (r *Request) park() (done, poked bool) {
	r.e.mu.Lock()
	defer r.e.mu.Unlock()
	if r.state.over() {
		return true, false
	}
	if r.pokeDue {
		r.pokeDue = false
		if r.op == opRecv && r.e.spin.max > 0 {
			return false, true
		}
	}
	if r.wake == nil {
		r.wake = make(chan struct{}, 1)
	}
	r.parked = true
	return false, false
}

// unpark ends a parked wait that gives up (its context or limit ended).
func (r *Request) unpark() {
	r.e.mu.Lock()
	r.parked = false
	r.e.mu.Unlock()
}

// signal wakes r's parked waiter, if any (under e.mu); one signal
// pending is enough, as the waiter looks at r when it wakes.
func (r *Request) signal() {
	if !r.parked {
		return
	}
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// Wait blocks until r completes or ctx ends; on ctx's end it returns
// ctx.Err() and r stays pending (Wait again, or Cancel). It first polls
// the network for the engine's spin budget (spinPolicy), then parks; a parked receive whose rendezvous matches is woken to receive the
// IsRecv reports whether r is a receive (Recv, Irecv, a probe's), not a
// send.
func (r *Request) IsRecv() bool { return r.op == opRecv }

// data itself, on its own processor.
func (r *Request) Wait(ctx context.Context) (Status, error) {
	st, _, err := r.WaitFor(ctx, 0)
	return st, err
}

// WaitFor is Wait that also gives up after d (0: never), reporting done
// false then, with a nil error: the caller looks at something else and
// waits again. A wait that ends while polling costs no timer.
func (r *Request) WaitFor(ctx context.Context, d time.Duration) (Status, bool, error) {
	if r.finished.Load() {
		// Completed by an earlier wait's polling, or by a rail's consumer:
		// the process is as busy with messages as after a wait that
		// polled its way to the end.
		if r.e.spin.max > 0 {
			r.e.sched.Attend(r.peer)
		}
		return r.status, true, r.err
	}
	budget := r.e.spin.next()
	done := r.spin(budget, r.peer)
	r.e.spin.report(budget, done)
	if done {
		return r.status, true, r.err
	}
	var expired <-chan time.Time
	if d > 0 {
		if r.timer == nil {
			r.timer = time.NewTimer(d)
		} else {
			r.timer.Reset(d)
		}
		defer r.timer.Stop()
		expired = r.timer.C
	}
	for {
		done, poked := r.park()
		if done {
			return r.status, true, r.err
		}
		if poked {
			// r.src was set before the poke.
			if r.spin(time.Duration(r.e.spin.max), r.src) {
				return r.status, true, r.err
			}
			continue
		}
		select {
		case <-r.wake:
			// Completed, or poked: park looks which.
		case <-ctx.Done():
			r.unpark()
			return Status{}, false, ctx.Err()
		case <-expired:
			r.unpark()
			return Status{}, false, nil
		}
	}
}

// Test reports whether r has completed, and if so its result.
func (r *Request) Test() (Status, bool, error) {
	if r.finished.Load() {
		return r.status, true, r.err
	}
	return Status{}, false, nil
}

// Cancel withdraws r if it can still be withdrawn: a receive not yet
// matched, or a rendezvous send whose data has not started. It returns true
// if r was cancelled (it then completes with ErrCanceled).
func (r *Request) Cancel() bool { return r.e.cancel(r) }

// spinGoschedEvery is how many empty polls a waiter with a processor of
// its own makes between two runtime.Gosched calls, which let the process's
// other goroutines (a TCP rail's, the application's) run. Measured here,
// every 256 polls instead of every 4 made TCP ping-pong 1.18x slower at the
// median, 1.36x in the mean; a waiter whose rails all deliver in its own
// Poll (shared memory: sched.SelfPolled) yields every selfPolledGosched
// polls instead, as the node segment's waits do: a Gosched costs more than
// a poll, and a message that comes during one waits for it (shared-memory
// ping-pong of 8 bytes: 0.87 µs one way yielding every 4 polls, 0.72 µs
// every 64).
const (
	spinGoschedEvery  = 4
	selfPolledGosched = 64
)

// Peer returns the world rank r sends to, or receives from (AnySource
// for a receive from any rank).
func (r *Request) Peer() int { return r.peer }

// spin waits by polling the rails to peer in the calling goroutine, until d
// passes with no byte arriving: the goroutine that needs the
// message receives it itself. Parking instead means another thread
// receives it and wakes this one, and a thread wake-up on a virtual
// machine takes 3–30 µs (DESIGN.md, facts measured here): more than a whole
// small-message round trip. When nothing arrives it yields the processor,
// so other goroutines (the rail's writer, the application's) still run,
// also with GOMAXPROCS=1.
func (r *Request) spin(d time.Duration, peer int) bool {
	if d <= 0 {
		return false
	}
	done, flush := r.poll(d, peer, true)
	if flush {
		// The data is with the rails: write what they left for their
		// background writer here, rather than wake it and park. Only once
		// polling has stopped: the write may block until the peer reads,
		// and a rail whose waiter polls leaves its input to that waiter
		// (tcp) — two ranks flushing to each other while still marked as
		// polling never read again (TestTwoRails hung so, 1 run in 8).
		r.e.sched.Flush(r.peer)
		done = r.finished.Load()
		if !done && r.proto != protoPull {
			// A push whose rest the rail's writer took: it ends as soon
			// as the writer is through, so poll for that rather than
			// park — a parked sender, and a peer told it is not
			// attentive, each cost a wake-up (64 KiB Bcasts between two
			// ranks ran at 5 µs or at 30 µs a call).
			done, _ = r.poll(d, peer, false)
		}
	}
	return done
}

// poll is spin's polling, bracketed by StartPolling and StopPolling: it
// reports whether r completed, or, when untilMoving, whether its data is
// with the rails (flush) and the caller should write it.
func (r *Request) poll(d time.Duration, peer int, untilMoving bool) (done, flush bool) {
	r.e.sched.StartPolling(peer) // AnySource (-1): every peer
	// Attentive unless about to park: a push leaving to flush polls again.
	defer func() { r.e.sched.StopPolling(peer, done || flush && r.proto != protoPull) }()
	// The clock is first read after 32 polls: most small-message waits end
	// before, and a clock read costs as much as a poll on a virtual machine.
	var deadline time.Time
	yield := r.e.spin.yield
	goschedEvery := spinGoschedEvery
	if r.e.sched.SelfPolled(peer) {
		goschedEvery = selfPolledGosched
	}
	progressed := false
	idle := 0
	for i := 1; ; i++ {
		if r.finished.Load() {
			return true, false
		}
		if untilMoving && r.moving.Load() {
			return false, true
		}
		if r.e.sched.Poll(peer) {
			progressed, idle = true, 0 // data is flowing: keep receiving it
		} else if yield {
			osYield()
			if idle++; idle%8 == 0 {
				runtime.Gosched()
			}
		} else if idle++; idle%goschedEvery == 0 {
			runtime.Gosched()
		}
		// A yielding poll may give the processor away for a scheduler's
		// time slice (milliseconds, when ranks outnumber processors): 32
		// of them outlasted a 200 ms wait's limit by as much again, so
		// then the clock is read at every empty poll.
		if i%32 == 0 || yield && idle > 0 {
			now := time.Now()
			if progressed || deadline.IsZero() {
				deadline, progressed = now.Add(d), false
			} else if now.After(deadline) {
				return false, false
			}
		}
	}
}

// complete finishes r; the caller holds e.mu and has just moved r into a
// state that is over (step).
func (r *Request) complete(st Status, err error) {
	if r.revoked && err != nil {
		err = ErrRevoked
	}
	r.status, r.err = st, err
	if r.pinned {
		r.pin.Unpin()
		r.pinned = false
	}
	r.finished.Store(true)
	if r.done != nil {
		close(r.done)
	}
	r.signal()
}

// Sent is called by the scheduler when one of r's packets has left.
func (r *Request) Sent(p *sched.Packet, err error) { r.e.sent(r, p, err) }
