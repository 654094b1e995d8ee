package observe

import (
	"fmt"
	"math/bits"
	"runtime"
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
	// pcs holds each lane's call site while a call holds the lane: a
	// call's token stays small.
	pcs   [maxLanes][sitePCs]uintptr
	rank  int
	mu    sync.Mutex
	batch []pending
	out   chan []pending
	done  chan struct{}
	w     *trace.RankWriter
	werr  error // the writer's first error, read after done
	// dropped counts spans never handed to the writer: recorded after it
	// refused a write, or after the file was closed.
	dropped atomic.Int64
	closed  bool // under mu
	free    sync.Pool
}

// pending is a span whose call site is not yet resolved.
type pending struct {
	span trace.Span
	pcs  [sitePCs]uintptr
}

// batchSpans is how many spans a batch holds: the writer's work comes in
// pieces of about 200 KiB, and a call appends without allocating.
const batchSpans = 2048

func newTracer(w *trace.RankWriter, rank int, offset int64) *tracer {
	t := &tracer{w: w, rank: rank, offset: offset, out: make(chan []pending, 8), done: make(chan struct{})}
	t.batch = make([]pending, 0, batchSpans)
	go Label(rank, "trace-writer", t.write)
	return t
}

// record appends the span of a finished call (end on this rank's clock).
func (t *tracer) record(tok *Token, end int64, comm string, c *Call) {
	p := pending{span: trace.Span{
		Name: c.Op.Name(), Cat: c.Op.Cat(), Start: tok.start + t.offset, End: end + t.offset, Lane: int(tok.lane),
		Comm: comm, Bytes: c.Bytes, Peer: c.WorldPeer, Root: c.WorldRoot, Alg: c.Alg, By: c.By,
	}}
	if c.Err != nil {
		p.span.Err = c.Err.Error()
	}
	if tok.lane < maxLanes {
		p.pcs = t.pcs[tok.lane]
	}
	t.lanes.give(tok.lane)
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		t.dropped.Add(1)
		return
	}
	t.batch = append(t.batch, p)
	var full []pending
	if len(t.batch) == cap(t.batch) {
		full = t.batch
		t.batch = t.newBatch()
	}
	t.mu.Unlock()
	if full != nil {
		t.out <- full
	}
}

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
// renames it into place.
func (t *tracer) close(end int64) error {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil
	}
	t.closed = true
	last := t.batch
	t.batch = nil
	t.mu.Unlock()
	if len(last) > 0 {
		t.out <- last
	}
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
