package commtune

import (
	"context"
	"errors"
	"fmt"
	"github.com/commtune/commtune/internal/coll"
	"os"
	"reflect"
	"runtime"
	"sync/atomic"
	"unsafe"

	"github.com/commtune/commtune/internal/comm"
	"github.com/commtune/commtune/internal/noderegion"
	"github.com/commtune/commtune/internal/observe"
	"github.com/commtune/commtune/internal/rma"
)

// Window is memory each rank of a communicator exposes to the others'
// one-sided operations (MPI-3 RMA): Put, Get, Accumulate, GetAccumulate,
// FetchAndOp and CompareAndSwap on a target's elements, inside the epochs
// MPI defines — Fence; Lock and Unlock (or LockAll and UnlockAll) with
// Flush; Post, Start, Complete and WaitExposure. Displacements count
// elements of T from the start of the target's memory.
//
// Ranks that can address each other's memory — goroutine ranks (Local),
// and processes of one node for a window from AllocWindow, which lives in
// a shared mapping — reach it in place: a Put is a copy, an accumulate an
// atomic operation on the element, a lock an atomic word. Others send
// their operations to the target's agent, a goroutine that serves them
// whatever the target's program is doing (passive-target progress; see
// docs/rma.md). Accumulates are atomic element by element, as MPI
// defines, whichever way they go.
//
// Methods are safe for concurrent use. Misuse — an operation outside an
// epoch, a displacement beyond the target's memory, Replace given to a
// collective — is an error naming the problem, and nothing is written.
type Window[T Number] struct {
	w     *rma.Window
	comm  *Comm
	local []T
	dups  []*comm.Comm
	// mapped holds the shared mappings to unmap at Free (AllocWindow's,
	// over processes).
	mapped [][]byte
	// shared is the registry entry goroutine ranks share, or nil.
	shared *sharedWindow
	// pin holds this rank's memory in place while processes of its node
	// read and write it by single copy.
	pin runtime.Pinner
}

// LockKind is a passive-target lock's mode: LockShared or LockExclusive.
type LockKind = rma.LockKind

// The lock kinds, MPI_LOCK_SHARED and MPI_LOCK_EXCLUSIVE: any number of
// origins hold a target's lock shared at once; one holds it exclusive.
const (
	LockShared    = rma.Shared
	LockExclusive = rma.Exclusive
)

// ErrEpoch is what an operation or synchronisation out of its place in
// MPI's epochs fails with (errors.Is): an access to a target outside any
// access epoch to it, a lock taken twice, an Unlock of no lock, a Complete
// without Start, a Free with an epoch open.
var ErrEpoch = rma.ErrEpoch

// ErrWindowFreed is what a call on a freed window fails with.
var ErrWindowFreed = rma.ErrFreed

// windowInfo is what each rank tells the others when a window is made.
type windowInfo struct {
	Size int    // bytes
	Elem int    // element size
	Kind string // element type
	Path string // shared mapping (AllocWindow over processes), or ""
	Addr uint64 // the memory's address, pinned, for single copy (NewWindow over processes), or 0
	Err  string
}

// sharedWindow is how goroutine ranks of one process find each other's
// window memory: an entry per window, each rank filling its slot.
type sharedWindow struct {
	targets []rma.Target
	left    atomic.Int32
}

// NewWindow makes a window of local, this rank's memory (its length may
// differ between ranks), on every rank of c: a collective call. local must
// not be reallocated while the window lives; the program reads and writes
// it directly inside its own epochs. Every rank must pass the same T.
func NewWindow[T Number](ctx context.Context, c *Comm, local []T) (*Window[T], error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	return makeWindow(ctx, c, local, false)
}

// AllocWindow allocates n zeroed elements of T for this rank (n may differ
// between ranks) and makes a window of them on every rank of c: a
// collective call (MPI_Win_allocate). Processes of one node get the memory
// in a mapping they all share, so they reach each other's windows in place;
// Local returns this rank's part.
func AllocWindow[T Number](ctx context.Context, c *Comm, n int) (*Window[T], error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	if n < 0 {
		return nil, fmt.Errorf("commtune: AllocWindow: %d elements", n)
	}
	if c.in.Endpoint().Shared != nil {
		return makeWindow(ctx, c, make([]T, n), false)
	}
	return makeWindow(ctx, c, make([]T, n), true)
}

// makeWindow is the collective both constructors share; mapShared puts
// this rank's memory in a shared mapping (local's contents are copied
// there: AllocWindow's are zero).
func makeWindow[T Number](ctx context.Context, c *Comm, local []T, mapShared bool) (*Window[T], error) {
	es := elemSize[T]()
	ep := c.in.Endpoint()
	info := windowInfo{Size: len(local) * es, Elem: es, Kind: reflect.TypeFor[T]().String()}
	var own []byte
	if mapShared {
		path, m, err := noderegion.Create(noderegion.Dir(), rma.HeaderSize+max(info.Size, 1))
		if err != nil {
			info.Err = err.Error()
		} else {
			info.Path, own = path, m
			local = unsafe.Slice((*T)(unsafe.Pointer(&m[rma.HeaderSize])), len(local))
		}
	}
	pinned := ep.Shared == nil && !mapShared && len(local) > 0
	var pin runtime.Pinner
	if pinned {
		// Processes of this node may read and write it in place
		// (process_vm_readv/writev): it must not move.
		pin.Pin(&local[0])
		info.Addr = uint64(uintptr(unsafe.Pointer(&local[0])))
	}
	all, err := allgatherValues(quietly(ctx), c, info)
	if info.Path != "" {
		defer os.Remove(info.Path)
	}
	if err != nil {
		noderegion.Unmap(own)
		pin.Unpin()
		return nil, fmt.Errorf("commtune: window: %w", err)
	}
	win := &Window[T]{comm: c, local: local, pin: pin}
	if own != nil {
		win.mapped = append(win.mapped, own)
	}
	var errs []error
	for r, p := range all {
		switch {
		case p.Err != "":
			errs = append(errs, fmt.Errorf("rank %d: %s", r, p.Err))
		case p.Elem != es || p.Kind != info.Kind:
			errs = append(errs, fmt.Errorf("rank %d makes a window of %s, this rank of %s", r, p.Kind, info.Kind))
		}
	}
	size := c.Size()
	direct := make([]rma.Target, size)
	var hdr *rma.Header
	if own != nil {
		hdr = rma.HeaderAt(own)
	} else {
		hdr = new(rma.Header)
	}
	dups := make([]*comm.Comm, 3)
	for i := range dups {
		if dups[i], err = c.in.Dup(); err != nil {
			return nil, err
		}
	}
	win.dups = dups
	mine := bytesOf(local)
	if sh := ep.Shared; sh != nil && len(errs) == 0 {
		// Goroutine ranks: every window is in one address space.
		key := windowKey{dups[0].ContextID(), c.WorldRank(0)}
		e, _ := sh.Windows.LoadOrStore(key, &sharedWindow{targets: make([]rma.Target, size)})
		win.shared = e.(*sharedWindow)
		win.shared.targets[c.Rank()] = rma.Target{Mem: mine, Header: hdr}
	} else if len(errs) == 0 {
		for r, p := range all {
			if r == c.Rank() || p.Path == "" || !ep.SameNode(c.WorldRank(r)) {
				continue
			}
			m, err := noderegion.Map(p.Path, rma.HeaderSize+max(p.Size, 1))
			if err != nil {
				errs = append(errs, fmt.Errorf("rank %d's window: %w", r, err))
				continue
			}
			win.mapped = append(win.mapped, m)
			direct[r] = rma.Target{Mem: m[rma.HeaderSize : rma.HeaderSize+p.Size], Header: rma.HeaderAt(m)}
		}
	}
	// Every rank has mapped or published what it could: agree.
	ok := []int32{1}
	if len(errs) > 0 {
		ok[0] = 0
	}
	if err := runNow(ctx)(allreduceCall[int32](quietly(ctx), c, ok, ok, Min, nil)); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 || ok[0] == 0 {
		win.release()
		if len(errs) == 0 {
			errs = append(errs, errors.New("another rank could not make its part"))
		}
		return nil, fmt.Errorf("commtune: window: %w", errors.Join(errs...))
	}
	if win.shared != nil {
		copy(direct, win.shared.targets) // all published before the Allreduce
	}
	agent := false
	sizes, world, remote := make([]int, size), make([]int, size), make([]uint64, size)
	for r, p := range all {
		sizes[r], world[r] = p.Size, c.WorldRank(r)
		if r != c.Rank() && direct[r].Header == nil {
			agent = true // accumulates and locks, at least, go to the agent
		}
		if r != c.Rank() && p.Addr != 0 && ep.SameNode(world[r]) && ep.Eng.ReadableBy(world[r]) {
			remote[r] = p.Addr
		}
	}
	win.w = rma.New(rma.Config{
		Req: dups[0], Rep: dups[1], Sync: dups[2], Coll: barrierOf{wrap(dups[0])},
		Local: mine, Header: hdr, Elem: es, Kind: reflect.TypeFor[T]().Kind(),
		Sizes: sizes, Direct: direct, Remote: remote, World: world, Copier: ep.Eng, Agent: agent,
	})
	return win, nil
}

// windowKey names a window among a process's goroutine ranks'.
type windowKey struct {
	ctx   uint64
	first int
}

// barrierOf gives a window its communicator's Barrier.
type barrierOf struct{ c *Comm }

func (b barrierOf) Barrier(ctx context.Context) error {
	return runNow(ctx)(b.c.prepare(quietly(ctx), coll.OpBarrier, coll.Layout{Elem: 1}, nil, nil, nil, true, nil))
}

// release unmaps, unpins and forgets what the window holds.
func (win *Window[T]) release() {
	win.pin.Unpin()
	for _, m := range win.mapped {
		noderegion.Unmap(m)
	}
	win.mapped = nil
	if s := win.shared; s != nil && int(s.left.Add(1)) == len(s.targets) {
		win.comm.in.Endpoint().Shared.Windows.Delete(windowKey{win.dups[0].ContextID(), win.comm.WorldRank(0)})
	}
	for _, d := range win.dups {
		if d != nil {
			d.Close()
		}
	}
}

// Free ends the window on every rank of its communicator (a collective
// call); no epoch may be open. Memory from AllocWindow is unmapped: Local's
// slice must not be used afterwards.
func (win *Window[T]) Free(ctx context.Context) error {
	if win == nil || win.w == nil {
		return errNilWindow
	}
	if err := win.w.Free(ctx); err != nil {
		return fmt.Errorf("commtune: window Free: %w", err)
	}
	win.release()
	return nil
}

var errNilWindow = errors.New("commtune: nil window")

// Local returns this rank's memory in the window.
func (win *Window[T]) Local() []T {
	if win == nil {
		return nil
	}
	return win.local
}

// Comm returns the communicator the window was made on.
func (win *Window[T]) Comm() *Comm {
	if win == nil {
		return nil
	}
	return win.comm
}

// Size returns the number of elements rank exposes (0 for a rank out of
// range).
func (win *Window[T]) Size(rank int) int {
	if win == nil || win.w == nil || rank < 0 || rank >= win.comm.Size() {
		return 0
	}
	return win.w.Size(rank) / win.w.Elem()
}

// rmaOp returns op's code for accumulates: a predefined operation,
// Replace or NoOp.
func rmaOp(op Op, call string) (rma.OpCode, error) {
	switch {
	case op.rma != 0:
		return op.rma, nil
	case op.code != 0:
		return rma.OpCode(op.code), nil
	}
	return 0, fmt.Errorf("commtune: %s takes a predefined operation (Sum, Max …, Replace or NoOp), not %q", call, op.name)
}

func wrapRMA(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("commtune: %w", err)
}

// Put writes origin into target's window from element disp on. It returns
// once origin may be reused; the data is in place once the epoch's
// synchronisation (Fence, Flush, Unlock, Complete) has returned.
func (win *Window[T]) Put(ctx context.Context, origin []T, target, disp int) error {
	if win == nil || win.w == nil {
		return errNilWindow
	}
	b, r := bytesOf(origin), beginRMA(win.comm, opPut)
	return r.end(ctx, opPut, len(b), target, wrapRMA(win.w.Put(ctx, b, target, disp)))
}

// Get reads len(result) elements of target's window from element disp
// into result; they are there when Get returns.
func (win *Window[T]) Get(ctx context.Context, result []T, target, disp int) error {
	if win == nil || win.w == nil {
		return errNilWindow
	}
	b, r := bytesOf(result), beginRMA(win.comm, opGet)
	return r.end(ctx, opGet, len(b), target, wrapRMA(win.w.Get(ctx, b, target, disp)))
}

// Accumulate combines origin into target's elements from disp on with op
// (a predefined operation, or Replace), element-wise atomically with
// every other accumulate.
func (win *Window[T]) Accumulate(ctx context.Context, origin []T, target, disp int, op Op) error {
	if win == nil || win.w == nil {
		return errNilWindow
	}
	b, r := bytesOf(origin), beginRMA(win.comm, opAccumulate)
	code, err := rmaOp(op, "Accumulate")
	if err == nil {
		err = wrapRMA(win.w.Accumulate(ctx, b, target, disp, code))
	}
	return r.end(ctx, opAccumulate, len(b), target, err)
}

// GetAccumulate is Accumulate that first fetches the target's elements
// into result (as long as origin; with NoOp, origin is ignored and
// result's length says how many): an atomic read-modify-write.
func (win *Window[T]) GetAccumulate(ctx context.Context, origin, result []T, target, disp int, op Op) error {
	if win == nil || win.w == nil {
		return errNilWindow
	}
	b, r := bytesOf(result), beginRMA(win.comm, opGetAccumulate)
	code, err := rmaOp(op, "GetAccumulate")
	if err == nil {
		err = wrapRMA(win.w.GetAccumulate(ctx, bytesOf(origin), b, target, disp, code))
	}
	return r.end(ctx, opGetAccumulate, len(b), target, err)
}

// FetchAndOp combines v into target's element disp with op and returns
// the element's value before: GetAccumulate of one element.
func (win *Window[T]) FetchAndOp(ctx context.Context, v T, target, disp int, op Op) (T, error) {
	if win == nil || win.w == nil {
		return *new(T), errNilWindow
	}
	r := beginRMA(win.comm, opFetchAndOp)
	n := int(unsafe.Sizeof(v))
	code, err := rmaOp(op, "FetchAndOp")
	if err != nil {
		return v, r.end(ctx, opFetchAndOp, n, target, err)
	}
	if n <= 8 {
		old, err := win.w.FetchAndOp(ctx, bitsOf(v), target, disp, code)
		return fromBits[T](old), r.end(ctx, opFetchAndOp, n, target, wrapRMA(err))
	}
	in, old := v, *new(T) // copies: v itself must not escape on the path above
	err = win.w.GetAccumulate(ctx, elemBytes(&in), elemBytes(&old), target, disp, code)
	return old, r.end(ctx, opFetchAndOp, n, target, wrapRMA(err))
}

// bitsOf returns the bits of v, of at most 8 bytes, in a word's low bytes
// (little-endian).
func bitsOf[T any](v T) uint64 {
	var u uint64
	*(*T)(unsafe.Pointer(&u)) = v
	return u
}

// fromBits is bitsOf's inverse.
func fromBits[T any](u uint64) T { return *(*T)(unsafe.Pointer(&u)) }

// CompareAndSwap replaces target's element disp with swap if it equals
// compare, and returns its value before, atomically.
func (win *Window[T]) CompareAndSwap(ctx context.Context, compare, swap T, target, disp int) (T, error) {
	if win == nil || win.w == nil {
		return *new(T), errNilWindow
	}
	r := beginRMA(win.comm, opCompareAndSwap)
	n := int(unsafe.Sizeof(compare))
	if n <= 8 {
		old, err := win.w.CompareAndSwapBits(ctx, bitsOf(compare), bitsOf(swap), target, disp)
		return fromBits[T](old), r.end(ctx, opCompareAndSwap, n, target, wrapRMA(err))
	}
	c, s, old := compare, swap, *new(T) // copies, as in FetchAndOp
	err := win.w.CompareAndSwap(ctx, elemBytes(&c), elemBytes(&s), elemBytes(&old), target, disp)
	return old, r.end(ctx, opCompareAndSwap, n, target, wrapRMA(err))
}

// elemBytes views one element's memory as bytes.
func elemBytes[T any](p *T) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(p)), unsafe.Sizeof(*p))
}

// RMARequest is a request-based one-sided operation under way (Rput,
// Rget, Raccumulate, RgetAccumulate). It is a Pending, so TestAll, WaitSome
// and the other calls over sets take it beside other requests.
type RMARequest struct {
	p *rma.Pending
	c *Comm // the window's: its counters count the Wait
}

// Wait blocks until the operation completes (Rput, Raccumulate: origin may
// be reused; Rget, RgetAccumulate: result holds the data) or ctx ends.
func (q *RMARequest) Wait(ctx context.Context) error {
	if q == nil {
		return errNilRequest
	}
	r := beginRMA(q.c, opRMAWait)
	return r.end(ctx, opRMAWait, -1, -1, wrapRMA(q.p.Wait(ctx)))
}

// Test reports whether the operation has completed, and its error if so.
func (q *RMARequest) Test() (bool, error) {
	if q == nil {
		return true, errNilRequest
	}
	ok, err := q.p.Test()
	return ok, wrapRMA(err)
}

// Done returns a channel closed when the operation completes.
func (q *RMARequest) Done() <-chan struct{} {
	if q == nil {
		return closedChan
	}
	return q.p.Done()
}

func (q *RMARequest) outcome() (Status, bool, error) {
	ok, err := q.Test()
	return Status{}, ok, err
}

// wait is Wait for the calls over sets (waiter): it polls the rails.
func (q *RMARequest) wait(ctx context.Context) error { return q.Wait(ctx) }

// rmaRequest returns the request of a call of op begun by r (moving bytes
// to or from target) that started p, or its error.
func rmaRequest(ctx context.Context, r rmaCall, op observe.Op, bytes, target int, p *rma.Pending, err error) (*RMARequest, error) {
	if err := r.end(ctx, op, bytes, target, wrapRMA(err)); err != nil {
		return nil, err
	}
	return &RMARequest{p, r.c}, nil
}

// Rput is Put returning a request, complete once origin may be reused.
func (win *Window[T]) Rput(origin []T, target, disp int) (*RMARequest, error) {
	if win == nil || win.w == nil {
		return nil, errNilWindow
	}
	b, r := bytesOf(origin), beginRMA(win.comm, opRput)
	p, err := win.w.PutAsync(b, target, disp)
	return rmaRequest(nil, r, opRput, len(b), target, p, err)
}

// Rget is Get returning a request, complete once result holds the data.
func (win *Window[T]) Rget(result []T, target, disp int) (*RMARequest, error) {
	if win == nil || win.w == nil {
		return nil, errNilWindow
	}
	b, r := bytesOf(result), beginRMA(win.comm, opRget)
	p, err := win.w.GetAsync(b, target, disp)
	return rmaRequest(nil, r, opRget, len(b), target, p, err)
}

// Raccumulate is Accumulate returning a request, complete once origin may
// be reused.
func (win *Window[T]) Raccumulate(origin []T, target, disp int, op Op) (*RMARequest, error) {
	if win == nil || win.w == nil {
		return nil, errNilWindow
	}
	b, r := bytesOf(origin), beginRMA(win.comm, opRaccumulate)
	code, err := rmaOp(op, "Raccumulate")
	if err != nil {
		return nil, r.end(nil, opRaccumulate, len(b), target, err)
	}
	p, err := win.w.AccumulateAsync(b, target, disp, code)
	return rmaRequest(nil, r, opRaccumulate, len(b), target, p, err)
}

// RgetAccumulate is GetAccumulate returning a request, complete once
// result holds the fetched elements.
func (win *Window[T]) RgetAccumulate(origin, result []T, target, disp int, op Op) (*RMARequest, error) {
	if win == nil || win.w == nil {
		return nil, errNilWindow
	}
	b, r := bytesOf(result), beginRMA(win.comm, opRgetAccumulate)
	code, err := rmaOp(op, "RgetAccumulate")
	if err != nil {
		return nil, r.end(nil, opRgetAccumulate, len(b), target, err)
	}
	p, err := win.w.GetAccumulateAsync(bytesOf(origin), b, target, disp, code)
	return rmaRequest(nil, r, opRgetAccumulate, len(b), target, p, err)
}

// Fence closes the window's fence epoch and opens the next on every rank
// (a collective call): every operation started before it, by any rank, is
// complete when it returns.
func (win *Window[T]) Fence(ctx context.Context) error {
	if win == nil || win.w == nil {
		return errNilWindow
	}
	r := beginRMA(win.comm, opFence)
	return r.end(ctx, opFence, -1, -1, wrapRMA(win.w.Fence(ctx)))
}

// Lock opens a passive-target epoch to target with a lock of kind; it
// returns once the lock is held. The target takes no part.
func (win *Window[T]) Lock(ctx context.Context, kind LockKind, target int) error {
	if win == nil || win.w == nil {
		return errNilWindow
	}
	r := beginRMA(win.comm, opLock)
	return r.end(ctx, opLock, -1, target, wrapRMA(win.w.Lock(ctx, kind, target)))
}

// Unlock closes the epoch Lock opened: every operation in it is complete
// at the target when it returns.
func (win *Window[T]) Unlock(ctx context.Context, target int) error {
	if win == nil || win.w == nil {
		return errNilWindow
	}
	r := beginRMA(win.comm, opUnlock)
	return r.end(ctx, opUnlock, -1, target, wrapRMA(win.w.Unlock(ctx, target)))
}

// LockAll opens a passive-target epoch to every rank, with shared locks.
func (win *Window[T]) LockAll(ctx context.Context) error {
	if win == nil || win.w == nil {
		return errNilWindow
	}
	r := beginRMA(win.comm, opLockAll)
	return r.end(ctx, opLockAll, -1, -1, wrapRMA(win.w.LockAll(ctx)))
}

// UnlockAll closes LockAll's epoch; its operations are complete at their
// targets when it returns.
func (win *Window[T]) UnlockAll(ctx context.Context) error {
	if win == nil || win.w == nil {
		return errNilWindow
	}
	r := beginRMA(win.comm, opUnlockAll)
	return r.end(ctx, opUnlockAll, -1, -1, wrapRMA(win.w.UnlockAll(ctx)))
}

// Flush completes, at target, every operation this rank started to it,
// inside a passive-target epoch.
func (win *Window[T]) Flush(ctx context.Context, target int) error {
	if win == nil || win.w == nil {
		return errNilWindow
	}
	r := beginRMA(win.comm, opFlush)
	return r.end(ctx, opFlush, -1, target, wrapRMA(win.w.Flush(ctx, target)))
}

// FlushAll is Flush of every target.
func (win *Window[T]) FlushAll(ctx context.Context) error {
	if win == nil || win.w == nil {
		return errNilWindow
	}
	r := beginRMA(win.comm, opFlushAll)
	return r.end(ctx, opFlushAll, -1, -1, wrapRMA(win.w.FlushAll(ctx)))
}

// FlushLocal completes locally (their buffers may be reused) the
// operations this rank started to target, inside a passive-target epoch.
func (win *Window[T]) FlushLocal(ctx context.Context, target int) error {
	if win == nil || win.w == nil {
		return errNilWindow
	}
	r := beginRMA(win.comm, opFlushLocal)
	return r.end(ctx, opFlushLocal, -1, target, wrapRMA(win.w.FlushLocal(ctx, target)))
}

// Sync orders this rank's loads and stores of its own window memory with
// what other ranks' operations did to it (MPI_Win_sync). Call it after a
// synchronisation outside the window (a Barrier, a message) that follows
// their epochs and before reading what they wrote, and after writing the
// memory and before that synchronisation, for their Gets to see the
// writes. The window's own synchronisations (Fence, Lock, Unlock, LockAll,
// UnlockAll, Post, WaitExposure, Free) do it themselves. Go's memory model
// needs it where an agent goroutine of this process wrote or read the
// memory (the race detector reports the access otherwise); elsewhere it
// costs one atomic add.
func (win *Window[T]) Sync() error {
	if win == nil || win.w == nil {
		return errNilWindow
	}
	win.w.Sync()
	return nil
}

// FlushLocalAll is FlushLocal of every target.
func (win *Window[T]) FlushLocalAll(ctx context.Context) error {
	if win == nil || win.w == nil {
		return errNilWindow
	}
	r := beginRMA(win.comm, opFlushLocalAll)
	return r.end(ctx, opFlushLocalAll, -1, -1, wrapRMA(win.w.FlushLocalAll(ctx)))
}

// Post opens an exposure epoch of this rank's window to the ranks of
// origins (a group of the window's communicator's ranks), each of which
// may access it once its Start returns; WaitExposure closes it.
func (win *Window[T]) Post(ctx context.Context, origins *Group) error {
	if win == nil || win.w == nil {
		return errNilWindow
	}
	r := beginRMA(win.comm, opWinPost)
	ranks, err := win.ranksOf("Post", origins)
	if err == nil {
		err = wrapRMA(win.w.Post(ctx, ranks))
	}
	return r.end(ctx, opWinPost, -1, -1, err)
}

// Start opens an access epoch to the ranks of targets (a group of the
// window's communicator's ranks), once each has posted an exposure epoch
// to this rank; Complete closes it.
func (win *Window[T]) Start(ctx context.Context, targets *Group) error {
	if win == nil || win.w == nil {
		return errNilWindow
	}
	r := beginRMA(win.comm, opWinStart)
	ranks, err := win.ranksOf("Start", targets)
	if err == nil {
		err = wrapRMA(win.w.Start(ctx, ranks))
	}
	return r.end(ctx, opWinStart, -1, -1, err)
}

// ranksOf returns the ranks, in the window's communicator, of g's members.
func (win *Window[T]) ranksOf(call string, g *Group) ([]int, error) {
	if g == nil {
		return nil, fmt.Errorf("commtune: window %s: nil group", call)
	}
	all := make([]int, g.Size())
	for i := range all {
		all[i] = i
	}
	ranks, err := g.TranslateRanks(all, win.comm.Group())
	if err != nil {
		return nil, fmt.Errorf("commtune: window %s: %w", call, err)
	}
	for i, r := range ranks {
		if r == Undefined {
			return nil, fmt.Errorf("commtune: window %s: rank %d of the group is not a rank of the window's communicator", call, i)
		}
	}
	return ranks, nil
}

// Complete closes Start's access epoch: its operations are complete at
// their targets when it returns.
func (win *Window[T]) Complete(ctx context.Context) error {
	if win == nil || win.w == nil {
		return errNilWindow
	}
	r := beginRMA(win.comm, opWinComplete)
	return r.end(ctx, opWinComplete, -1, -1, wrapRMA(win.w.Complete(ctx)))
}

// WaitExposure closes Post's exposure epoch once every origin in it has
// called Complete (MPI_Win_wait).
func (win *Window[T]) WaitExposure(ctx context.Context) error {
	if win == nil || win.w == nil {
		return errNilWindow
	}
	r := beginRMA(win.comm, opWinWait)
	return r.end(ctx, opWinWait, -1, -1, wrapRMA(win.w.WaitExposure(ctx)))
}
