package shm

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/commtune/commtune/internal/driver"
)

// methods are the Put methods a shm rail offers; driver.MethodDefault is
// MethodCopy. "cma" is not among them: it is a pull by the receiver
// (Caps.SingleCopy), not a Put.
var methods = []driver.Method{driver.MethodCopy, driver.MethodCacheFree, driver.MethodVmsplice}

// Methods returns the Put methods a shm rail offers when the kernel allows
// them all.
func Methods() []driver.Method { return slices.Clone(methods) }

// rail is this rank's connection to one local peer: it writes the peer's
// ring for us, and its Poll drains the rings of our segment.
type rail struct {
	t     *Transport
	peer  int
	pid   int
	seg   *segment // the peer's inbound segment
	index int      // of our ring in it
	// out and fb are made when the rail links its ring (link); read them
	// only once linked is set.
	out    *ring // our ring in the peer's segment
	fb     *fbox // our fast box in it (SendNow; the scheduler serializes)
	linked atomic.Bool
	linkMu sync.Mutex
	pmu    sync.Mutex // one writer of out (or q) at a time: frames, Byes and pipe acknowledgments
	// q is the peer's inbound queue, when both ends have a pool: the
	// pair's records go through it, and linked then means the pair has
	// its fast box (queue.go). queued counts the records, noBox is set
	// once the peer had no box left to give, granted once it gave us one
	// (the Link record may wait for a fragment); all under pmu.
	q       *fifo
	queued  int
	noBox   bool
	granted bool
	in      *inRing  // its ring in our segment
	pipe    *os.File // vmsplice: our pipe to the peer, made at its first use
	pipeIn  *os.File // vmsplice: the peer's pipe to us, opened at its first use
	bellFd  int      // the peer's bell, for waking its consumer (-1: none)
	caps    driver.Caps

	// One frame at a time: what Post could not finish, for the writer
	// goroutine or a flushing waiter (claim says which).
	wmu    sync.Mutex
	busy   bool
	rest   putState
	iovBuf [][]byte // rest's iovec, owned by the rail
	claim  atomic.Bool
	wio    sync.Mutex

	pipeOwed atomic.Int64 // vmsplice bytes the peer has not acknowledged yet
	// pipeSteps counts what a vmsplice frame still waits for: the writer
	// splicing its last bytes, and the peer acknowledging all of them —
	// in either order. The one that brings it to zero completes the frame.
	pipeSteps atomic.Int32

	lost    atomic.Bool
	byeSeen atomic.Bool
	refused atomic.Bool // the peer broke the protocol: nothing more of it is delivered
	errMu   sync.Mutex
	err     error
	failed  atomic.Bool // err is set
}

// putState is a frame being written: a Packet waiting for room, or the
// remaining chunks of a Put.
type putState struct {
	kind      driver.FrameKind
	method    driver.Method
	region    uint64
	offset    int64
	iov       [][]byte
	announced bool // vmsplice: the pipe record is written
	spliced   bool // vmsplice: every byte is in the pipe
}

var (
	_ driver.Rail      = (*rail)(nil)
	_ driver.Poller    = (*rail)(nil)
	_ driver.PollGroup = (*rail)(nil)
	_ driver.Flusher   = (*rail)(nil)
	_ driver.Puller    = (*rail)(nil)
	_ driver.VecPuller = (*rail)(nil)
	_ driver.Immediate = (*rail)(nil)
)

// finish computes the capabilities (the peer's probe of our memory is
// known once every local rank has connected).
func (rl *rail) finish() {
	canPull := rl.seg.mem[offCanPull+rl.index] == 1
	ms := methods
	if rl.t.cfg.NoVmsplice {
		ms = slices.DeleteFunc(slices.Clone(methods), func(m driver.Method) bool { return m == driver.MethodVmsplice })
	}
	maxPacket := maxRecord(rl.seg.capacity) - recHeader
	if rl.q != nil {
		maxPacket = fragSlotSize - fragHeader - recHeader // a packet fits a fragment
	}
	rl.caps = driver.Caps{
		Transport:  "shm",
		Local:      true,
		MaxPacket:  maxPacket,
		Iovec:      true,
		SingleCopy: canPull,
		Methods:    ms,
	}
}

func (rl *rail) Caps() driver.Caps { return rl.caps }
func (rl *rail) Peer() int         { return rl.peer }

func (rl *rail) failure() error {
	if !rl.failed.Load() {
		return nil // the common case, without the lock
	}
	rl.errMu.Lock()
	defer rl.errMu.Unlock()
	return rl.err
}

func (rl *rail) fail(err error) {
	rl.errMu.Lock()
	if rl.err == nil {
		rl.err = err
		rl.failed.Store(true)
	}
	rl.errMu.Unlock()
}

// Post copies f into the peer's ring. Packets and Put chunks that find room
// are written at once; the rest continues in the writer goroutine (or in a
// waiter that flushes), which reports Idle.
func (rl *rail) Post(f *driver.Frame) (bool, error) {
	if err := rl.failure(); err != nil {
		return false, err
	}
	if rl.q == nil {
		if err := rl.link(); err != nil {
			return false, err
		}
	}
	rl.wmu.Lock()
	done, spliced, err := rl.post(f)
	rl.wmu.Unlock()
	if spliced {
		rl.pipeStep() // the peer's acknowledgment may already be in
	}
	return done, err
}

// post is Post under wmu; spliced reports a vmsplice frame whose bytes are
// all in the pipe already.
func (rl *rail) post(f *driver.Frame) (done, spliced bool, err error) {
	if rl.busy {
		return false, false, fmt.Errorf("shm rail to rank %d: Post while a frame is in flight", rl.peer)
	}
	// Our own copy of the iovec: the scheduler reuses its array once the
	// frame is done, and for vmsplice that can happen (on the receiver's
	// acknowledgment) while the writer is still stepping through it.
	rl.iovBuf = append(rl.iovBuf[:0], f.Iov...)
	st := putState{kind: f.Kind, method: f.Method, region: f.Region, offset: f.Offset, iov: rl.iovBuf}
	if st.method == driver.MethodDefault {
		st.method = driver.MethodCopy
	}
	if st.method == driver.MethodVmsplice && rl.onQueue() {
		st.method = driver.MethodCopy // the queue carries no pipe records: fragments it is
	}
	if f.Kind == driver.Put && st.method == driver.MethodVmsplice {
		rl.pipeSteps.Store(2)
	}
	switch f.Kind {
	case driver.Packet:
		if n := f.Len(); n > rl.caps.MaxPacket {
			return false, false, fmt.Errorf("shm rail to rank %d: Packet of %d bytes exceeds %d", rl.peer, n, rl.caps.MaxPacket)
		}
	case driver.Put:
		if !slices.Contains(rl.caps.Methods, st.method) {
			return false, false, fmt.Errorf("shm rail to rank %d: Put method %v is not among %v", rl.peer, st.method, rl.caps.Methods)
		}
	default:
		return false, false, fmt.Errorf("shm rail to rank %d: unknown frame kind %d", rl.peer, f.Kind)
	}
	done, err = rl.write(&st, false)
	if err != nil || done {
		return done, false, err
	}
	rl.rest = st
	rl.busy = true
	if st.spliced {
		rl.claim.Store(true) // nothing left to write: only the acknowledgment
		return false, true, nil
	}
	rl.claim.Store(false)
	rl.t.wg.Add(1)
	go rl.writer()
	return false, false, nil
}

// write puts as much of st as fits into the ring (all of it when block
// is set, waiting for room) and reports whether it is done. For vmsplice,
// done means handed to the pipe: completion waits for the peer's
// acknowledgment.
func (rl *rail) write(st *putState, block bool) (bool, error) {
	for {
		if err := rl.failure(); err != nil {
			return false, err
		}
		var progressed, finished bool
		switch {
		case st.kind == driver.Packet:
			progressed = rl.writePacket(st.iov)
			finished = progressed
		case rl.onQueue():
			// Chunks of a fragment each through the queue: no ring.
			var err error
			if progressed, err = rl.queueChunk(st); err != nil {
				return false, err
			}
			finished = progressed && len(st.iov) == 0
		case st.method == driver.MethodVmsplice:
			var err error
			progressed, finished, err = rl.writePipe(st, block)
			if err != nil {
				return false, err
			}
		default:
			progressed = rl.writeChunk(st)
			finished = progressed && len(st.iov) == 0
		}
		if finished {
			if st.kind == driver.Put && st.method == driver.MethodVmsplice {
				st.spliced = true
				return false, nil // done when pipeStep has seen both ends
			}
			return true, nil
		}
		if progressed {
			continue
		}
		if err := rl.outFault(); err != nil {
			return false, err
		}
		if !block {
			return false, nil
		}
		need := rl.t.cfg.ChunkSize + recHeader + putFields + payloadAln // a chunk
		if st.kind == driver.Packet {
			need = packetRecord(st.iov)
		}
		rl.waitRoom(need)
	}
}

// waitRoom waits for the peer to free ring space: briefly polling, then on
// the ring's futex. Meanwhile it takes in what every inbound ring holds:
// the peer may be waiting for room in ours just as this rank waits in its,
// each with its consumer asleep because a waiter polls (the one writing
// here) — two ranks sending each other a message larger than a ring, or a
// cycle of them, would otherwise wait for each other forever. The peer's
// own waitRoom drains this ring in turn, which wakes the futex.
//
// need is the record that found no room: waiting stops once it fits
// (ring.fits).
func (rl *rail) waitRoom(need int) {
	if rl.onQueue() {
		rl.waitFragment()
		return
	}
	for i := 0; i < 64; i++ {
		if rl.out.fits(need) {
			return
		}
		if !rl.t.drainAll() {
			runtime.Gosched()
		}
	}
	rl.t.drainAll()
	rl.out.waitSpace(need, 10*time.Millisecond)
}

// SendNow writes head and body as one Packet record if there is room now
// (driver.Immediate): in the fast box when it is small enough and the box
// has room, else in the ring. The scheduler calls it only while no frame
// of ours is in flight, so ring records stay in order; a fast box record
// may overtake ring records sent earlier, which the core reorders by
// sequence number (SendNow carries only eager messages), and the receiver
// drains the box before each ring record, so none falls behind a later
// one (a Bye in particular). On the queue path the same holds with queue
// records in place of ring records (handleQueued), the box once the pair
// has earned one.
func (rl *rail) SendNow(head, body []byte) bool {
	n := recHeader + len(head) + len(body)
	if n-recHeader > rl.caps.MaxPacket || rl.lost.Load() || rl.failed.Load() {
		return false
	}
	if !rl.linked.Load() && !rl.onQueue() {
		return false // Post links the ring
	}
	if n-recHeader <= FboxMax && rl.linked.Load() && rl.fb.write(head, body) {
		rl.ring()
		return true
	}
	return rl.writeRecord(func(w []byte) int {
		le.PutUint32(w, uint32(n))
		w[4], w[5] = kindPacket, 0
		copy(w[recHeader+copy(w[recHeader:], head):], body)
		return n
	}, n)
}

// packetRecord returns the length of the Packet record carrying iov.
func packetRecord(iov [][]byte) int {
	n := recHeader
	for _, b := range iov {
		n += len(b)
	}
	return n
}

// writePacket copies a whole packet into one record.
func (rl *rail) writePacket(iov [][]byte) bool {
	n := packetRecord(iov)
	return rl.writeRecord(func(w []byte) int {
		le.PutUint32(w, uint32(n))
		w[4], w[5] = kindPacket, 0
		off := recHeader
		for _, b := range iov {
			off += copy(w[off:], b)
		}
		return n
	}, n)
}

// writeRecord reserves n bytes of the peer's ring, lets fill write the
// record (it returns the record's length) and publishes it; false when the
// ring lacks room. On the queue path it writes a fragment instead, and
// links the pair's fast box first if the pair has earned one.
func (rl *rail) writeRecord(fill func(w []byte) int, n int) bool {
	if rl.q != nil {
		return rl.writeQueued(fill, n)
	}
	if rl.link() != nil {
		return false
	}
	rl.pmu.Lock()
	w := rl.out.reserve(n)
	if w == nil {
		rl.pmu.Unlock()
		return false
	}
	rl.out.commit(fill(w))
	rl.pmu.Unlock()
	rl.ring()
	return true
}

// writeRecordWait is writeRecord waiting for room (bounded: a peer that
// stops draining is lost anyway).
func (rl *rail) writeRecordWait(fill func(w []byte) int, n int) bool {
	deadline := time.Now().Add(10 * time.Second)
	for !rl.writeRecord(fill, n) {
		if rl.failure() != nil || rl.outFault() != nil || time.Now().After(deadline) {
			return false
		}
		if rl.onQueue() {
			rl.waitFragment()
		} else {
			rl.out.waitSpace(n, time.Millisecond)
		}
	}
	return true
}

// writeChunk copies the next chunk of a Put into one record: up to
// ChunkSize bytes, gathered from as many iovec parts as it spans (a
// message made of many small segments still moves in full records).
func (rl *rail) writeChunk(st *putState) bool {
	if len(st.iov) == 0 {
		return true
	}
	n := st.chunkLen(rl.t.cfg.ChunkSize)
	rl.pmu.Lock()
	defer rl.pmu.Unlock()
	// Pad so the payload starts on a cache line of the ring, wherever the
	// record lands (at the tail, or at 0 if it must wrap): room for the
	// most padding is reserved, and what is not used stays free.
	w := rl.out.reserveStream(recHeader + putFields + payloadAln - 1 + n)
	if w == nil {
		return false
	}
	pad := (payloadAln - (rl.out.wpos+recHeader+putFields)%payloadAln) % payloadAln
	size := recHeader + putFields + pad + n
	st.putHeader(w, size, pad)
	// The ring itself stays cached: the receiver reads it at once (a
	// cache-bypassing store here made 16 MiB ping-pong 40% slower).
	st.gather(w[recHeader+putFields+pad : size])
	rl.out.commit(size)
	rl.ring()
	return true
}

// chunkLen returns how many bytes of st go in a chunk of at most limit.
func (st *putState) chunkLen(limit int) int {
	n := 0
	for _, b := range st.iov {
		if n += len(b); n >= limit {
			return limit
		}
	}
	return n
}

// putHeader writes the header and fields of a Put record of size bytes
// whose payload follows pad bytes of padding.
func (st *putState) putHeader(w []byte, size, pad int) {
	le.PutUint32(w, uint32(size))
	w[4], w[5], w[6] = kindPut, byte(pad), 0
	if st.method == driver.MethodCacheFree {
		w[6] = putCacheFree // the receiver copies out the same way
	}
	le.PutUint64(w[8:], st.region)
	le.PutUint64(w[16:], uint64(st.offset))
}

// gather copies the next len(dst) bytes of st into dst and moves st past
// them.
func (st *putState) gather(dst []byte) {
	st.offset += int64(len(dst))
	for len(dst) > 0 || (len(st.iov) > 0 && len(st.iov[0]) == 0) {
		k := copy(dst, st.iov[0])
		dst = dst[k:]
		if k == len(st.iov[0]) {
			st.iov = st.iov[1:]
		} else {
			st.iov[0] = st.iov[0][k:]
		}
	}
}

// ring wakes the peer's consumer if it sleeps, nobody there polls, and
// either the peer is not attentive or its consumer sleeps with no timeout
// (so that it may have decided to before the mark was set) — unless a ring
// is pending already (rung): the consumer clears rung when it wakes, before
// it looks at the rings, so it will see this record. Without that, every
// message to a woken consumer still waiting for a processor rang again: up
// to a thousand write system calls in a few milliseconds.
func (rl *rail) ring() {
	// polling is read last: waiters write it at every wait, so reading it
	// costs a cache-line transfer, and an attentive owner whose consumer
	// sleeps timed (the usual state of a busy rank) is settled by the
	// three words before it, which change only when the consumer sleeps
	// or wakes.
	if rl.seg.word32(offSleepers).Load() != 0 &&
		(rl.seg.word32(offAttentive).Load() == 0 || rl.seg.word32(offUntimed).Load() != 0) &&
		rl.seg.word32(offPolling).Load() == 0 &&
		rl.seg.word32(offRung).CompareAndSwap(0, 1) {
		ringBell(rl.bellFd)
	}
}

// writer finishes the frame Post could not, unless a waiter flushes
// first. It is a goroutine per such frame, not one per rail waiting for
// work: with a rank per peer on a node of 256, a writer each held 255
// goroutine stacks for frames most pairs never leave unfinished.
func (rl *rail) writer() {
	defer rl.t.wg.Done()
	rl.writeRest(true)
}

// writeRest writes the pending frame if nobody claimed it yet, waiting for
// room, and reports the rail idle (or, for vmsplice, leaves that to the
// acknowledgment). It reports whether it did the work.
func (rl *rail) writeRest(block bool) bool {
	rl.wio.Lock()
	defer rl.wio.Unlock()
	if !rl.claim.CompareAndSwap(false, true) {
		return false
	}
	rl.wmu.Lock()
	st := rl.rest
	rl.wmu.Unlock()
	done, err := rl.write(&st, block)
	if err == nil && !done {
		if st.spliced {
			rl.pipeStep() // vmsplice: every byte is in the pipe
		}
		return true
	}
	rl.wmu.Lock()
	rl.rest, rl.busy = putState{}, false
	rl.wmu.Unlock()
	rl.t.cfg.Handler.Idle(rl, err)
	return true
}

// Flush writes the rest of the frame in flight in the calling goroutine
// (driver.Flusher): a sender waiting for its large message streams the
// chunks itself as the receiver drains them.
func (rl *rail) Flush() bool {
	rl.wmu.Lock()
	pending := rl.busy && !rl.claim.Load()
	rl.wmu.Unlock()
	return pending && rl.writeRest(true)
}

// bye tells the peer we finalize: after any frame in flight, with a Bye
// record, or with a mark in its segment if we never wrote to it (linking
// a ring only to say goodbye would give every pair its memory at the end).
func (rl *rail) bye() {
	if rl.failure() != nil || rl.lost.Load() {
		return
	}
	if !rl.linked.Load() && rl.q == nil {
		rl.seg.setLinkState(rl.index, linkBye)
		rl.ring()
		return
	}
	deadline := time.Now().Add(2 * time.Second)
	for {
		rl.wmu.Lock()
		busy := rl.busy
		rl.wmu.Unlock()
		if !busy || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Microsecond)
	}
	rl.writeRecordWait(func(w []byte) int {
		le.PutUint32(w, recHeader)
		w[4] = kindBye
		return recHeader
	}, recHeader)
}

// close releases the peer's segment and pipes (no writer runs).
func (rl *rail) close() {
	if rl.pipe != nil {
		rl.pipe.Close()
		os.Remove(rl.pipe.Name()) // the peer removes it when it opens it; not if it never did
	}
	if rl.pipeIn != nil {
		rl.pipeIn.Close()
	}
	closeBellWriter(rl.bellFd)
	rl.seg.unmap()
}
