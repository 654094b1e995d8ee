package rma

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/commtune/commtune/internal/coll"
	"github.com/commtune/commtune/internal/comm"
	"github.com/commtune/commtune/internal/core"
	"github.com/commtune/commtune/internal/driver"
)

// Target is how an origin reaches a rank's window in place: its memory and
// header, or nothing (zero) when it is reached through its agent.
type Target struct {
	Mem    []byte
	Header *Header
}

// SingleCopy reads and writes ranges of another process's memory (the
// engine's process_vm_readv and process_vm_writev), by world rank.
type SingleCopy interface {
	ReadSpans(peer int, dst [][]byte, src []driver.Span) error
	WriteSpans(peer int, dst []driver.Span, src [][]byte) error
}

// Barrierer is what a window needs of its communicator's collectives.
type Barrierer interface {
	Barrier(ctx context.Context) error
}

// Config describes one rank's window, as every rank made it (the caller
// exchanged sizes and addresses).
type Config struct {
	// Req, Rep and Sync are three communicators of the window's ranks,
	// with contexts of their own (Dup): requests to agents, their replies,
	// and the notices of post-start-complete-wait.
	Req, Rep, Sync *comm.Comm
	// Coll synchronises the window's ranks (Fence, Free).
	Coll Barrierer
	// Local is this rank's memory; Header its synchronisation words.
	Local  []byte
	Header *Header
	// Elem and Kind describe the elements (the same on every rank).
	Elem int
	Kind reflect.Kind
	// Sizes holds every rank's window bytes.
	Sizes []int
	// Direct holds, by rank, the targets this rank reaches in place.
	Direct []Target
	// Remote holds, by rank, the address of the target's memory in its
	// process where this rank reaches it by single copy (Copier): Put and
	// Get go that way; accumulates and locks through its agent. 0: not.
	Remote []uint64
	// World holds every rank's world rank, for Copier.
	World  []int
	Copier SingleCopy
	// Agent says some rank reaches this one only through its agent.
	Agent bool
}

// Window is one rank's handle on a window. Its methods are safe for
// concurrent use, as MPI's are under MPI_THREAD_MULTIPLE.
type Window struct {
	cfg   Config
	rank  int
	agent *agent

	mu          sync.Mutex
	ep          *epochs
	closed      atomic.Bool        // freed (set under mu, read with or without it)
	outstanding []int              // by target: requests to its agent not yet flushed
	sends       map[int][]*Pending // by target: request-based sends not yet seen complete
	tags        atomic.Uint32
	// memSync orders this process's accesses to its own window memory
	// with its agent's, for Go's memory model (the race detector checks
	// it): the agent adds to it before and after each request, this
	// rank's synchronisations add to it too (Sync, Fence, the lock calls,
	// Post, WaitExposure, Free). Other processes' causality (the origin
	// waited for the agent's answer, then a Barrier) is invisible here.
	memSync atomic.Uint64
}

// New makes this rank's window from cfg and starts its agent when some
// origin needs it.
func New(cfg Config) *Window {
	w := &Window{cfg: cfg, rank: cfg.Req.Rank(), ep: newEpochs(len(cfg.Sizes)), outstanding: make([]int, len(cfg.Sizes))}
	if cfg.Agent {
		w.agent = startAgent(w)
	}
	return w
}

// Sync orders this rank's loads and stores of its own window memory with
// what other ranks did to it through its agent (MPI_Win_sync): after a
// synchronisation outside the window (a Barrier, a message) that follows
// their epochs, and before reading what they wrote; and after writing the
// memory, before that synchronisation, for their gets to see it. The
// window's own synchronisations (Fence, Lock, Unlock, LockAll, UnlockAll,
// Post, WaitExposure) include it.
func (w *Window) Sync() { w.memSync.Add(1) }

// Local returns this rank's memory.
func (w *Window) Local() []byte { return w.cfg.Local }

// Size returns rank's window bytes.
func (w *Window) Size(rank int) int { return w.cfg.Sizes[rank] }

// Elem returns the window's element size.
func (w *Window) Elem() int { return w.cfg.Elem }

// ErrFreed is what a call on a freed window fails with.
var ErrFreed = errors.New("rma: window is freed")

// target returns how to reach rank (in place, or nil for its agent): the
// window's own memory for this rank.
func (w *Window) target(rank int) *Target {
	if rank == w.rank {
		return &Target{Mem: w.cfg.Local, Header: w.cfg.Header}
	}
	if t := &w.cfg.Direct[rank]; t.Header != nil {
		return t
	}
	return nil
}

// check validates an access of n bytes at element offset disp of target
// in the current epoch, and returns its byte offset. It takes no lock
// when the access is in order (the epochs' mirrors).
func (w *Window) check(call string, target, disp, n int) (int, error) {
	if w.closed.Load() {
		return 0, ErrFreed
	}
	if target < 0 || target >= len(w.cfg.Sizes) {
		return 0, fmt.Errorf("rma: %s: target rank %d outside a window of %d ranks", call, target, len(w.cfg.Sizes))
	}
	size, elem := w.cfg.Sizes[target], w.cfg.Elem
	if disp < 0 || disp > size/elem || n > size-disp*elem {
		return 0, fmt.Errorf("rma: %s: %d elements at displacement %d outside rank %d's window of %d elements", call, n/elem, disp, target, size/elem)
	}
	if !w.ep.open(target) {
		w.mu.Lock()
		err := w.ep.access(target, call)
		w.mu.Unlock()
		if err != nil {
			return 0, err
		}
	}
	return disp * elem, nil
}

// putDataMin is the size from which a put through an agent sends its data
// as a message of its own, which the agent receives in place, rather than
// behind the request's header, which it receives in a buffer and copies:
// over TCP a 4 MiB put went at 1.2-1.4 GB/s one way, 2.5-2.9 the other.
const putDataMin = 32 << 10

// remote returns the address of rank's memory where this rank reaches it
// by single copy, else 0.
func (w *Window) remote(rank int) uint64 {
	if w.cfg.Remote == nil {
		return 0
	}
	return w.cfg.Remote[rank]
}

// nextTag returns a fresh reply tag.
func (w *Window) nextTag() int { return int(w.tags.Add(1) & (comm.TagUB >> 1)) }

// send sends a request to target's agent: the header, then data.
func (w *Window) send(ctx context.Context, target int, q request, data ...[]byte) error {
	var hdr [headerLen]byte
	q.elem = w.cfg.Elem
	segs := append([][]byte{q.encode(hdr[:])}, data...)
	w.mu.Lock()
	w.outstanding[target]++
	w.mu.Unlock()
	return w.cfg.Req.SendSegs(ctx, segs, target, 0)
}

// call sends a request to target's agent and waits for its reply, whose
// data lands in result.
func (w *Window) call(ctx context.Context, target int, q request, result []byte, data ...[]byte) error {
	r, err := w.callAsync(target, q, result, data...)
	if err != nil {
		return err
	}
	return r.Wait(ctx)
}

// callAsync sends a request to target's agent and returns its reply,
// received into result, under way.
func (w *Window) callAsync(target int, q request, result []byte, data ...[]byte) (*Pending, error) {
	q.tag = w.nextTag()
	var status [1]byte
	rr, err := w.cfg.Rep.IrecvSegs([][]byte{status[:], result}, target, q.tag)
	if err != nil {
		return nil, err
	}
	p := &Pending{req: rr, status: &status, result: result, target: target}
	if err := w.send(context.Background(), target, q, data...); err != nil {
		rr.Cancel()
		return nil, err
	}
	return p, nil
}

// Put writes data at element disp of target's window.
func (w *Window) Put(ctx context.Context, data []byte, target, disp int) error {
	off, err := w.check("Put", target, disp, len(data))
	if err != nil || len(data) == 0 {
		return err
	}
	if t := w.target(target); t != nil {
		copy(t.Mem[off:], data)
		return nil
	}
	if a := w.remote(target); a != 0 {
		return w.writeRemote(target, a+uint64(off), data)
	}
	if len(data) >= putDataMin {
		q := request{kind: kPutData, offset: off, length: len(data), tag: w.nextTag()}
		if err := w.send(ctx, target, q); err != nil {
			return err
		}
		return w.cfg.Rep.Send(ctx, data, target, q.tag)
	}
	return w.send(ctx, target, request{kind: kPut, offset: off, length: len(data)}, data)
}

// Get reads len(result) bytes at element disp of target's window.
func (w *Window) Get(ctx context.Context, result []byte, target, disp int) error {
	off, err := w.check("Get", target, disp, len(result))
	if err != nil || len(result) == 0 {
		return err
	}
	if t := w.target(target); t != nil {
		copy(result, t.Mem[off:])
		return nil
	}
	if a := w.remote(target); a != 0 {
		return w.readRemote(target, a+uint64(off), result)
	}
	return w.call(ctx, target, request{kind: kGet, offset: off, length: len(result)}, result)
}

// kernel checks op against the window's elements.
func (w *Window) kernel(call string, op OpCode) (coll.Reducer, error) {
	red, err := Kernel(op, w.cfg.Kind)
	if err != nil {
		return nil, fmt.Errorf("rma: %s: %w", call, err)
	}
	return red, nil
}

// Accumulate combines data into target's window at element disp with op,
// element-wise atomically.
func (w *Window) Accumulate(ctx context.Context, data []byte, target, disp int, op OpCode) error {
	red, err := w.kernel("Accumulate", op)
	if err != nil {
		return err
	}
	off, err := w.check("Accumulate", target, disp, len(data))
	if err != nil || len(data) == 0 {
		return err
	}
	if t := w.target(target); t != nil {
		accumulate(t.Mem, t.Mem[off:], data, nil, w.cfg.Elem, localOp(op, w.cfg.Kind), red, t.Header)
		return nil
	}
	return w.send(ctx, target, request{kind: kAcc, op: op, offset: off, length: len(data)}, data)
}

// GetAccumulate is Accumulate that first fetches the target's elements
// into result (len(result) == len(data)); with OpNoOp it is an atomic Get.
func (w *Window) GetAccumulate(ctx context.Context, data, result []byte, target, disp int, op OpCode) error {
	p, err := w.getAccumulate(data, result, target, disp, op)
	if p == nil || err != nil {
		return err
	}
	return p.Wait(ctx)
}

// GetAccumulateAsync is GetAccumulate returning its completion.
func (w *Window) GetAccumulateAsync(data, result []byte, target, disp int, op OpCode) (*Pending, error) {
	p, err := w.getAccumulate(data, result, target, disp, op)
	if p == nil && err == nil {
		p = done(nil)
	}
	return p, err
}

// getAccumulate does GetAccumulate in place (nil Pending) or sends it to
// target's agent.
func (w *Window) getAccumulate(data, result []byte, target, disp int, op OpCode) (*Pending, error) {
	red, err := w.kernel("GetAccumulate", op)
	if err != nil {
		return nil, err
	}
	if len(result) != len(data) && op != OpNoOp {
		return nil, fmt.Errorf("rma: GetAccumulate: result of %d bytes for %d bytes of data", len(result), len(data))
	}
	off, err := w.check("GetAccumulate", target, disp, len(result))
	if err != nil || len(result) == 0 {
		return nil, err
	}
	if t := w.target(target); t != nil {
		if op == OpNoOp {
			data = result // unread
		}
		accumulate(t.Mem, t.Mem[off:], data, result, w.cfg.Elem, localOp(op, w.cfg.Kind), red, t.Header)
		return nil, nil
	}
	if op == OpNoOp {
		data = make([]byte, len(result)) // the agent wants the range's length; the data is unused
	}
	return w.callAsync(target, request{kind: kGetAcc, op: op, offset: off, length: len(data)}, result, data)
}

// FetchAndOp is GetAccumulate of one element of at most 8 bytes, given
// and returned as its bits (little-endian, in the low bytes): in place it
// allocates nothing.
func (w *Window) FetchAndOp(ctx context.Context, v uint64, target, disp int, op OpCode) (uint64, error) {
	elem := w.cfg.Elem
	red, err := w.kernel("FetchAndOp", op)
	if err != nil {
		return 0, err
	}
	off, err := w.check("FetchAndOp", target, disp, elem)
	if err != nil {
		return 0, err
	}
	t := w.target(target)
	if t != nil && atomicWidth(t.Mem, elem) {
		return fetchOp(unsafe.Pointer(&t.Mem[off]), elem, v, localOp(op, w.cfg.Kind), red), nil
	}
	in, out := make([]byte, 8), make([]byte, 8)
	binary.LittleEndian.PutUint64(in, v)
	if t != nil {
		accumulate(t.Mem, t.Mem[off:], in[:elem], out[:elem], elem, localOp(op, w.cfg.Kind), red, t.Header)
	} else if err := w.call(ctx, target, request{kind: kGetAcc, op: op, offset: off, length: elem}, out[:elem], in[:elem]); err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(out), nil
}

// CompareAndSwapBits is CompareAndSwap of an element of at most 8 bytes
// given and returned as its bits.
func (w *Window) CompareAndSwapBits(ctx context.Context, compare, swap uint64, target, disp int) (uint64, error) {
	elem := w.cfg.Elem
	off, err := w.check("CompareAndSwap", target, disp, elem)
	if err != nil {
		return 0, err
	}
	t := w.target(target)
	if t != nil && atomicWidth(t.Mem, elem) {
		return casBits(unsafe.Pointer(&t.Mem[off]), elem, compare, swap), nil
	}
	c, s, out := make([]byte, 8), make([]byte, 8), make([]byte, 8)
	binary.LittleEndian.PutUint64(c, compare)
	binary.LittleEndian.PutUint64(s, swap)
	if err := w.CompareAndSwap(ctx, c[:elem], s[:elem], out[:elem], target, disp); err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(out), nil
}

// CompareAndSwap replaces target's element at disp with swap if it equals
// compare, fetching its old value into result (one element each).
func (w *Window) CompareAndSwap(ctx context.Context, compare, swap, result []byte, target, disp int) error {
	elem := w.cfg.Elem
	if len(compare) != elem || len(swap) != elem || len(result) != elem {
		return fmt.Errorf("rma: CompareAndSwap takes one element")
	}
	off, err := w.check("CompareAndSwap", target, disp, elem)
	if err != nil {
		return err
	}
	if t := w.target(target); t != nil {
		compareAndSwap(t.Mem, t.Mem[off:], compare, swap, result, t.Header)
		return nil
	}
	return w.call(ctx, target, request{kind: kCAS, offset: off, length: elem}, result, compare, swap)
}

// PutAsync is Put returning its local completion: the data may be reused
// once it is complete.
func (w *Window) PutAsync(data []byte, target, disp int) (*Pending, error) {
	off, err := w.check("Put", target, disp, len(data))
	if err != nil || len(data) == 0 {
		return done(err), err
	}
	if t := w.target(target); t != nil {
		copy(t.Mem[off:], data)
		return done(nil), nil
	}
	if a := w.remote(target); a != 0 {
		return done(w.writeRemote(target, a+uint64(off), data)), nil
	}
	if len(data) >= putDataMin {
		q := request{kind: kPutData, offset: off, length: len(data), tag: w.nextTag()}
		if _, err := w.isend(target, q, nil); err != nil {
			return nil, err
		}
		r, err := w.cfg.Rep.Isend(data, target, q.tag)
		if err != nil {
			return nil, err
		}
		return w.track(target, r), nil
	}
	return w.isend(target, request{kind: kPut, offset: off, length: len(data)}, data)
}

// AccumulateAsync is Accumulate returning its local completion.
func (w *Window) AccumulateAsync(data []byte, target, disp int, op OpCode) (*Pending, error) {
	red, err := w.kernel("Accumulate", op)
	if err != nil {
		return nil, err
	}
	off, err := w.check("Accumulate", target, disp, len(data))
	if err != nil || len(data) == 0 {
		return done(err), err
	}
	if t := w.target(target); t != nil {
		accumulate(t.Mem, t.Mem[off:], data, nil, w.cfg.Elem, localOp(op, w.cfg.Kind), red, t.Header)
		return done(nil), nil
	}
	return w.isend(target, request{kind: kAcc, op: op, offset: off, length: len(data)}, data)
}

func (w *Window) isend(target int, q request, data []byte) (*Pending, error) {
	hdr := make([]byte, headerLen)
	q.elem = w.cfg.Elem
	w.mu.Lock()
	w.outstanding[target]++
	w.mu.Unlock()
	r, err := w.cfg.Req.IsendSegs([][]byte{q.encode(hdr), data}, target, 0)
	if err != nil {
		return nil, err
	}
	return w.track(target, r), nil
}

// track returns the Pending of r, a send to target, kept for FlushLocal.
func (w *Window) track(target int, r *core.Request) *Pending {
	p := &Pending{req: r, target: target}
	w.mu.Lock()
	if w.sends == nil {
		w.sends = map[int][]*Pending{}
	}
	w.sends[target] = append(w.sends[target], p)
	w.mu.Unlock()
	return p
}

// writeRemote writes data at addr of target's process (single copy).
func (w *Window) writeRemote(target int, addr uint64, data []byte) error {
	return w.cfg.Copier.WriteSpans(w.cfg.World[target], []driver.Span{{Addr: addr, Len: len(data)}}, [][]byte{data})
}

// readRemote reads result from addr of target's process (single copy).
func (w *Window) readRemote(target int, addr uint64, result []byte) error {
	return w.cfg.Copier.ReadSpans(w.cfg.World[target], [][]byte{result}, []driver.Span{{Addr: addr, Len: len(result)}})
}

// GetAsync is Get returning its completion: result holds the data once it
// is complete.
func (w *Window) GetAsync(result []byte, target, disp int) (*Pending, error) {
	off, err := w.check("Get", target, disp, len(result))
	if err != nil || len(result) == 0 {
		return done(err), err
	}
	if t := w.target(target); t != nil {
		copy(result, t.Mem[off:])
		return done(nil), nil
	}
	if a := w.remote(target); a != 0 {
		return done(w.readRemote(target, a+uint64(off), result)), nil
	}
	return w.callAsync(target, request{kind: kGet, offset: off, length: len(result)}, result)
}
