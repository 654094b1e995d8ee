package observe

import (
	"fmt"
	"math/bits"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/commtune/commtune/internal/trace"
)

// tracer writes a rank's spans to its timeline file as the rank runs:
// calls append to a batch under a lock; full batches go to a goroutine
// that resolves call sites and encodes, off the calls' path.
type tracer struct {
	offset int64 // job clock = Now() + offset
	lanes  laneSet
	rank   int
	out    chan []pending
	done   chan struct{}
	w      *trace.RankWriter
	werr   error // the writer's first error, read after done
	// dropped counts spans never handed to the writer: recorded after it
	// refused a write, or after the file was closed.
	dropped atomic.Int64
	closed  atomic.Bool
	free    sync.Pool
	// held are full batches kept for the end (hold), under heldMu.
	heldMu sync.Mutex
	held   [][]pending
	// spill is the batch of the calls beyond maxLanes in flight at once,
	// under spillMu.
	spillMu sync.Mutex
	spill   []pending
}

// pending is a span whose call site is not yet resolved.
type pending struct {
	span trace.Span
	pcs  [sitePCs]uintptr
}

// batchSpans is how many spans a batch holds: the writer's work comes in
// pieces of about 400 KiB, and a call appends without allocating.
const batchSpans = 2048

func newTracer(w *trace.RankWriter, rank int, offset int64) *tracer {
	t := &tracer{w: w, rank: rank, offset: offset, out: make(chan []pending, 16), done: make(chan struct{})}
	go Label(rank, "trace-writer", t.write)
	return t
}

// record appends the span of a finished call (end on this rank's clock)
// to its lane's batch, which only the call holding the lane touches: no
// lock on the way.
func (t *tracer) record(tok *Token, end int64, comm string, c *Call) {
	if t.closed.Load() {
		t.lanes.give(tok.lane())
		t.dropped.Add(1)
		return
	}
	p := pending{span: trace.Span{
		Name: c.Op.Name(), Cat: c.Op.Cat(), Start: tok.start + t.offset, End: end + t.offset, Lane: int(tok.lane()),
		Comm: comm, Bytes: c.Bytes, Peer: c.WorldPeer, Root: c.WorldRoot, Alg: c.Alg, By: c.By,
	}}
	if c.Err != nil {
		p.span.Err = c.Err.Error()
	}
	if tok.lane() >= maxLanes {
		t.spillMu.Lock()
		t.spill = t.appendSpan(t.spill, &p)
		t.spillMu.Unlock()
		return
	}
	lb := &t.lanes.bufs[tok.lane()]
	p.pcs = lb.pcs
	lb.batch = t.appendSpan(lb.batch, &p)
	t.lanes.give(tok.lane())
}

// appendSpan appends p to batch, handing a full batch to the writer.
func (t *tracer) appendSpan(batch []pending, p *pending) []pending {
	if batch == nil {
		batch = t.newBatch()
	}
	batch = append(batch, *p)
	if len(batch) == cap(batch) {
		t.hold(batch)
		return nil
	}
	return batch
}

// hold keeps a full batch in memory while the held batches number at
// most heldBatches, handing the oldest to the writer beyond: encoding a span
// takes the writer about 170 ns of a processor the ranks may need, so a
// run that fits is encoded at its end, and a longer one pays as it goes
// for what does not fit (as Score-P's per-thread buffers do).
func (t *tracer) hold(batch []pending) {
	t.heldMu.Lock()
	t.held = append(t.held, batch)
	var out []pending
	if len(t.held) > heldBatches {
		out = t.held[0]
		t.held = slices.Delete(t.held, 0, 1)
	}
	t.heldMu.Unlock()
	if out != nil {
		t.out <- out
	}
}

// heldBatches is how many full batches a rank keeps before the writer
// encodes any: 262 144 spans, about 50 MiB.
var heldBatches = 128

func (t *tracer) newBatch() []pending {
	if b, ok := t.free.Get().([]pending); ok {
		return b[:0]
	}
	return make([]pending, 0, batchSpans)
}

// write is the writer goroutine: it resolves each span's call site and
// hands it to the file.
func (t *tracer) write() {
	defer close(t.done)
	sites := map[[sitePCs]uintptr]string{}
	for b := range t.out {
		for i := range b {
			p := &b[i]
			p.span.Site = site(sites, p.pcs)
			if t.werr == nil {
				t.werr = t.w.Write(p.span) // on error the writer counts what it lost
			} else {
				t.dropped.Add(1)
			}
		}
		clear(b)
		t.free.Put(b[:0])
	}
}

// close writes what is left and the file's end (end on the job clock) and
// renames it into place. Calls still in flight then (none, when the world
// communicator closes as it should) count as dropped.
func (t *tracer) close(end int64) error {
	if t.closed.Swap(true) {
		return nil
	}
	for deadline := Now() + 1e9; t.lanes.used.Load() != 0 && Now() < deadline; {
		runtime.Gosched() // a call finishing its span
	}
	for i := range t.lanes.bufs {
		if t.lanes.used.Load()&(1<<i) != 0 {
			continue // still held: its batch is not ours to take
		}
		if b := t.lanes.bufs[i].batch; len(b) > 0 {
			t.out <- b
		}
		t.lanes.bufs[i].batch = nil
	}
	t.spillMu.Lock()
	if len(t.spill) > 0 {
		t.out <- t.spill
	}
	t.spill = nil
	t.spillMu.Unlock()
	// Last: a call recording as close began may have held a batch.
	t.heldMu.Lock()
	for _, b := range t.held {
		t.out <- b // oldest first
	}
	t.held = nil
	t.heldMu.Unlock()
	close(t.out)
	<-t.done
	// A refused write loses the spans the writer held (it counts them
	// itself) and those recorded after, never passed to it: the file
	// keeps what was written and says how many are missing.
	err := t.w.Close(end, t.dropped.Load())
	if t.werr != nil {
		return fmt.Errorf("commtune: the timeline of rank %d misses spans: %w", t.rank, t.werr)
	}
	return err
}

// site names the program's call among pcs ("file.go:42 pkg.Func"): the
// first frame outside the library's own packages ("" if every frame kept
// is the library's). The cache holds the stacks already named.
func site(cache map[[sitePCs]uintptr]string, pcs [sitePCs]uintptr) string {
	if pcs[0] == 0 {
		return ""
	}
	if s, ok := cache[pcs]; ok {
		return s
	}
	n := 0
	for n < len(pcs) && pcs[n] != 0 {
		n++
	}
	frames := runtime.CallersFrames(pcs[:n])
	s := ""
	for {
		f, more := frames.Next()
		if !libraryFrame(f.Function) {
			file := f.File
			if i := strings.LastIndexByte(file, '/'); i >= 0 {
				file = file[i+1:]
			}
			s = file + ":" + strconv.Itoa(f.Line) + " " + shortFunc(f.Function)
			break
		}
		if !more {
			break
		}
	}
	cache[pcs] = s
	return s
}

// modulePath is the library's import path.
const modulePath = "github.com/commtune/commtune"

// libraryFrame reports whether fn is the library's: its root package or
// one of its internal packages (the examples are programs).
func libraryFrame(fn string) bool {
	rest, ok := strings.CutPrefix(fn, modulePath)
	if !ok {
		return false
	}
	return strings.HasPrefix(rest, ".") || strings.HasPrefix(rest, "/internal/")
}

// shortFunc drops a function's import path but for its package name.
func shortFunc(fn string) string {
	if i := strings.LastIndexByte(fn, '/'); i >= 0 {
		return fn[i+1:]
	}
	return fn
}

// laneSet hands out a rank's lanes: a call takes the lowest lane no call
// in flight holds, so that the spans of one lane never overlap.
type laneSet struct {
	used     atomic.Uint64 // lanes 0 to maxLanes-1
	overflow atomic.Int32  // beyond: never reused, and no call site
	// bufs are what each lane's call holds: its call site, and the spans
	// of the lane's calls not yet handed to the writer.
	bufs [maxLanes]laneBuf
}

type laneBuf struct {
	pcs   [sitePCs]uintptr
	batch []pending
}

// maxLanes is how many lanes a rank reuses: calls in flight at once on one
// rank, more than a program makes but in a storm of nonblocking ones.
const maxLanes = 64

func (l *laneSet) take() int32 {
	for {
		u := l.used.Load()
		if u == ^uint64(0) {
			return maxLanes + l.overflow.Add(1)
		}
		i := bits.TrailingZeros64(^u)
		if l.used.CompareAndSwap(u, u|1<<i) {
			return int32(i)
		}
	}
}

func (l *laneSet) give(lane int32) {
	if lane >= maxLanes {
		return
	}
	for {
		u := l.used.Load()
		if l.used.CompareAndSwap(u, u&^(1<<lane)) {
			return
		}
	}
}

func itoa(i int) string { return strconv.Itoa(i) }
