package halo

import (
	"context"
	"encoding/binary"
	"fmt"
	"unsafe"

	"github.com/commtune/commtune/internal/core"
	"github.com/commtune/commtune/internal/driver"
)

// One-sided halo implementations, ADCL's Put and Get variants, in
// active-target epochs (MPI's post-start-complete-wait) renewed every
// exchange.
//
// Put: the receiving rank exposes its receive box (the Channel's Expose:
// a post naming the region goes to the neighbour) and the neighbour puts
// its send box straight into it, over the rails' Put path, with no
// rendezvous handshake on the sending side. The exposure ends once every
// byte has landed.
//
// Get: the receiving rank reads the neighbour's send box in place, in one
// copy (CMA's process_vm_readv on one node): at the first exchange every
// rank tells each neighbour where the box it sends that neighbour lies in
// its memory; then, every exchange, the owner posts that its box is ready
// (a message of no bytes), the reader reads it and answers that it is done,
// and the owner's exchange ends when all its readers are. A neighbour this
// rank cannot read (another node, goroutine ranks) is served by the owner
// putting its box into the reader's exposed receive box: on the wire, Put.

// Tags of the Get synchronisation messages on the Halo's communicator,
// above the direction tags (DirectionIndex, < 27) the data carry;
// each adds the direction the data travel.
const (
	tagWindow = 1 << 10 // owner → reader at the first exchange: where the send box lies
	tagMode   = 2 << 10 // reader → owner at the first exchange: 1 if it will read, 0 if the owner puts
	tagPost   = 3 << 10 // owner → reader: the box is ready
	tagDone   = 4 << 10 // reader → owner: it is read
)

// rmaState is a transfer's one-sided state.
type rmaState struct {
	sendMem, recvMem [][]byte      // the send and receive boxes as the memory they occupy
	remote           []driver.Span // Get, read: the neighbour's send box in its memory
	read             bool          // Get: this rank reads its receive box from the neighbour
	readBy           bool          // Get: the neighbour reads this rank's send box
}

// prepareRMA gives each transfer its memory lists: the boxes' runs in
// place (ddt) or their packed buffers.
func (x *Exec) prepareRMA() {
	for _, ts := range x.phases {
		for i := range ts {
			t := &ts[i]
			if x.impl.Data == InPlace {
				t.rma.sendMem, t.rma.recvMem = t.sendSegs, t.recvSegs
			} else {
				t.rma.sendMem, t.rma.recvMem = [][]byte{t.sendBuf}, [][]byte{t.recvBuf}
			}
		}
	}
}

// connectGet tells every neighbour where its send box lies and whether
// it may read it, learns the same of theirs, then agrees with each which
// of them read: a reader reads if the owner has seen it can (core
// Engine.ReadableBy: the shm rail's probe of process_vm_readv), a rail
// to the owner reads ranges of memory (Engine.CanRead), and the box
// described has the receive box's size.
func (x *Exec) connectGet(ctx context.Context) error {
	x.pending = x.pending[:0]
	xfers := x.remoteXfers()
	for _, t := range xfers {
		// A word saying whether the neighbour may read, then the ranges.
		msg := make([]byte, 0, 8+16*len(t.rma.sendMem))
		var may uint64
		if x.ch.ReadableBy(t.peer) {
			may = 1
		}
		msg = binary.LittleEndian.AppendUint64(msg, may)
		for _, b := range t.rma.sendMem {
			if len(b) > 0 {
				msg = binary.LittleEndian.AppendUint64(msg, uint64(uintptr(unsafe.Pointer(&b[0]))))
				msg = binary.LittleEndian.AppendUint64(msg, uint64(len(b)))
			}
		}
		r, err := x.isendTo(t.peer, tagWindow+t.sendTag, nil, msg)
		if err != nil {
			return err
		}
		x.pending = append(x.pending, r)
	}
	modes := make([]byte, 2*len(xfers)) // what this rank tells, then what it is told
	for i, t := range xfers {
		st, err := x.ch.Probe(ctx, t.peer, tagWindow+t.recvTag)
		if err != nil {
			return err
		}
		msg := make([]byte, st.Count)
		r, err := x.irecvFrom(t.peer, tagWindow+t.recvTag, nil, msg)
		if err != nil {
			return err
		}
		if _, err := x.await(ctx, r); err != nil {
			return err
		}
		if len(msg)%16 != 8 {
			return fmt.Errorf("commtune: halo: rank %d described its box in %d bytes, want 8 + 16 per range", t.peer, len(msg))
		}
		may := binary.LittleEndian.Uint64(msg) == 1
		msg = msg[8:]
		total := 0
		t.rma.remote = t.rma.remote[:0]
		for ; len(msg) > 0; msg = msg[16:] {
			s := driver.Span{Addr: binary.LittleEndian.Uint64(msg), Len: int(binary.LittleEndian.Uint64(msg[8:]))}
			if s.Len <= 0 || s.Len > 1<<40 {
				return fmt.Errorf("commtune: halo: rank %d described a range of %d bytes", t.peer, s.Len)
			}
			total += s.Len
			t.rma.remote = append(t.rma.remote, s)
		}
		t.rma.read = may && x.ch.CanRead(t.peer) && total == segsLen(t.rma.recvMem)
		if t.rma.read {
			modes[i] = 1
		}
		mr, err := x.isendTo(t.peer, tagMode+t.recvTag, nil, modes[i:i+1])
		if err != nil {
			return err
		}
		x.pending = append(x.pending, mr)
	}
	for i, t := range xfers {
		told := modes[len(xfers)+i : len(xfers)+i+1]
		r, err := x.irecvFrom(t.peer, tagMode+t.sendTag, nil, told)
		if err != nil {
			return err
		}
		if _, err := x.await(ctx, r); err != nil {
			return err
		}
		t.rma.readBy = told[0] == 1
	}
	if _, err := x.awaitPending(ctx); err != nil {
		return err
	}
	x.connected = true
	return nil
}

// remoteXfers lists the transfers with other ranks, in plan order.
func (x *Exec) remoteXfers() []*xfer {
	var out []*xfer
	for _, ts := range x.phases {
		for i := range ts {
			if ts[i].local < 0 {
				out = append(out, &ts[i])
			}
		}
	}
	return out
}

func segsLen(segs [][]byte) int {
	n := 0
	for _, b := range segs {
		n += len(b)
	}
	return n
}

// startRMA begins a one-sided exchange. All at once, every receive box is
// exposed (or its owner's post awaited) before any data moves, and the
// reads are left for wait; in pairs, the whole exchange happens here.
func (x *Exec) startRMA(ctx context.Context) error {
	if x.impl.Primitive == Get && !x.connected {
		if err := x.connectGet(ctx); err != nil {
			return fmt.Errorf("commtune: halo: connecting the Get windows: %w", err)
		}
	}
	if x.impl.Partners == Pairwise {
		return x.pairs(ctx, x.transferRMA)
	}
	ts := x.phases[0]
	if err := x.pack(ts); err != nil {
		return err
	}
	x.recvs, x.reads = x.recvs[:0], x.reads[:0]
	for i := range ts {
		if t := &ts[i]; t.local < 0 {
			r, err := x.receiveSide(t)
			if err != nil {
				return err
			}
			if t.rma.read && x.impl.Primitive == Get {
				x.reads = append(x.reads, read{t, r})
				continue
			}
			x.pending = append(x.pending, r)
			x.recvs = append(x.recvs, t)
		}
	}
	for i := range ts {
		if t := &ts[i]; t.local < 0 {
			if err := x.sendSide(t); err != nil {
				return err
			}
		}
	}
	return nil
}

// read is a Get read left for wait: the transfer and the receive of
// its owner's post.
type read struct {
	t    *xfer
	post *core.Request
}

// receiveSide starts t's receiving half: the exposure of its receive box,
// or, for a Get read, the receive of the owner's post.
func (x *Exec) receiveSide(t *xfer) (*core.Request, error) {
	if x.impl.Primitive == Get && t.rma.read {
		return x.irecvFrom(t.peer, tagPost+t.recvTag, nil, nil)
	}
	return x.ch.Expose(t.peer, t.recvTag, t.rma.recvMem)
}

// sendSide starts t's sending half, adding its requests to pending: the
// put of the send box, or, when the neighbour reads it, the receive of its
// "done" and the post that the box is ready.
func (x *Exec) sendSide(t *xfer) error {
	if x.impl.Primitive == Get && t.rma.readBy {
		done, err := x.irecvFrom(t.peer, tagDone+t.sendTag, nil, nil)
		if err != nil {
			return err
		}
		x.pending = append(x.pending, done)
		post, err := x.isendTo(t.peer, tagPost+t.sendTag, nil, nil)
		if err != nil {
			return err
		}
		x.pending = append(x.pending, post)
		return nil
	}
	put, err := x.ch.Put(t.peer, t.sendTag, t.rma.sendMem)
	if err != nil {
		return err
	}
	x.pending = append(x.pending, put)
	return nil
}

// read waits for the owner's post, reads t's receive box from its memory
// and tells it so, adding that message to pending.
func (x *Exec) read(ctx context.Context, t *xfer, post *core.Request) error {
	if _, err := x.await(ctx, post); err != nil {
		return recvErr(t, err)
	}
	if err := x.ch.ReadSpans(t.peer, t.rma.recvMem, t.rma.remote); err != nil {
		return fmt.Errorf("commtune: halo: get from rank %d: %w", t.peer, err)
	}
	done, err := x.isendTo(t.peer, tagDone+t.recvTag, nil, nil)
	if err != nil {
		return err
	}
	x.pending = append(x.pending, done)
	return x.received(t, core.Status{Source: t.peer, Tag: t.recvTag, Count: segsLen(t.rma.recvMem)})
}

// waitRMA completes an all-at-once one-sided exchange: the reads, then
// every exposure, put and synchronisation message, then the unpacking.
func (x *Exec) waitRMA(ctx context.Context) error {
	for _, rd := range x.reads {
		if err := x.read(ctx, rd.t, rd.post); err != nil {
			return err
		}
	}
	x.reads = x.reads[:0]
	return x.finishRecvs(ctx)
}

// transferRMA carries out one one-sided transfer of a pair exchange. Like
// Sendrecv it cannot wait forever (pairOrder): each side exposes its box,
// or posts that its send box is ready, before it blocks on the other.
func (x *Exec) transferRMA(ctx context.Context, t *xfer) error {
	recv, err := x.receiveSide(t)
	if err != nil {
		return err
	}
	reading := x.impl.Primitive == Get && t.rma.read
	x.pending = x.pending[:0]
	if !reading {
		x.pending = append(x.pending, recv)
	}
	if err := x.sendSide(t); err != nil {
		return err
	}
	if reading {
		if err := x.read(ctx, t, recv); err != nil {
			return err
		}
	}
	sts, err := x.awaitPending(ctx)
	if err != nil {
		return fmt.Errorf("commtune: halo exchange with rank %d: %w", t.peer, err)
	}
	if reading {
		return nil // read checked it
	}
	return x.received(t, sts[0])
}
