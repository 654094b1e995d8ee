package observe

import (
	"fmt"
	"math/bits"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/commtune/commtune/internal/trace"
)

// tracer writes a rank's timeline: a call appends its span as a record
// to its lane's batch, without a lock; full batches are held in memory and
// encoded at the end, or by a goroutine off the calls' path once more are
// full than heldBatches.
type tracer struct {
	offset int64 // job clock = Now() + offset
	clock  tickClock
	lanes  laneSet
	rank   int
	out    chan []record
	done   chan struct{}
	spare  chan []record // a batch ready (prepareBatches)
	stop   chan struct{} // closed at the end: no more batches to prepare
	w      *trace.RankWriter
	werr   error // the writer's first error, read after done
	// dropped counts spans never handed to the writer: recorded after it
	// refused a write, or after the file was closed.
	dropped atomic.Int64
	closed  atomic.Bool
	free    sync.Pool
	names   names
	// held are full batches kept for the end (hold), under heldMu.
	heldMu sync.Mutex
	held   [][]record
	// spill is the batch of the calls beyond maxLanes in flight at once,
	// under spillMu.
	spill   []record
	spillMu sync.Mutex
}

// record is a span as a call leaves it: a few words and no pointers, so
// that appending one is a small copy and the batches held, megabytes of
// them, are never scanned by the collector. Its strings are numbers in
// the tracer's names.
type record struct {
	start, end int64 // on the tracer's clock
	bytes      int64
	peer, root int32
	lane       int32
	op         Op
	comm       uint32 // names.comms
	path       uint32 // names.paths
	site       uint32 // names.sites, 0: none
	err        uint32 // names.errs, 0: none
}

// names are the strings records refer to by number, each kept once: the
// communicators' labels, the (algorithm, chooser) pairs, the call sites'
// return addresses and the errors. A lane remembers its last of each, so a
// call like the one before takes no lock.
type names struct {
	mu      sync.Mutex
	comms   []string
	commIDs map[string]uint32
	paths   [][2]string
	pathIDs map[[2]string]uint32
	sites   [][sitePCs]uintptr
	siteIDs map[[sitePCs]uintptr]uint32
	errs    []string
	errIDs  map[string]uint32
}

func newNames() names {
	return names{comms: []string{""}, commIDs: map[string]uint32{"": 0},
		paths: [][2]string{{}}, pathIDs: map[[2]string]uint32{{}: 0},
		sites: [][sitePCs]uintptr{{}}, siteIDs: map[[sitePCs]uintptr]uint32{{}: 0}, errs: []string{""}, errIDs: map[string]uint32{"": 0}}
}

func (n *names) comm(s string) uint32 { return n.intern(&n.comms, n.commIDs, s) }

func (n *names) err(e error) uint32 { return n.intern(&n.errs, n.errIDs, e.Error()) }

// intern returns s's number in list, adding it.
func (n *names) intern(list *[]string, ids map[string]uint32, s string) uint32 {
	n.mu.Lock()
	defer n.mu.Unlock()
	id, ok := ids[s]
	if !ok {
		id = uint32(len(*list))
		*list = append(*list, s)
		ids[s] = id
	}
	return id
}

func (n *names) path(alg, by string) uint32 {
	n.mu.Lock()
	defer n.mu.Unlock()
	k := [2]string{alg, by}
	id, ok := n.pathIDs[k]
	if !ok {
		id = uint32(len(n.paths))
		n.paths = append(n.paths, k)
		n.pathIDs[k] = id
	}
	return id
}

func (n *names) site(pcs *[sitePCs]uintptr) uint32 {
	n.mu.Lock()
	defer n.mu.Unlock()
	id, ok := n.siteIDs[*pcs]
	if !ok {
		id = uint32(len(n.sites))
		n.sites = append(n.sites, *pcs)
		n.siteIDs[*pcs] = id
	}
	return id
}

// batchSpans is how many spans a batch holds: the writer's work comes in
// pieces of about 230 KiB, and a call appends without allocating.
const batchSpans = 4096

func newTracer(w *trace.RankWriter, rank int, offset int64) *tracer {
	t := &tracer{w: w, rank: rank, offset: offset, clock: newTickClock(), out: make(chan []record, 16), done: make(chan struct{}),
		spare: make(chan []record, 1), stop: make(chan struct{}),
		names: newNames()}
	go Label(rank, "trace-writer", t.write)
	go Label(rank, "trace-batches", t.prepareBatches)
	return t
}

// record appends the span of a finished call (end on the tracer's clock)
// to its lane's batch, which only the call holding the lane touches: no
// lock on the way while the call's communicator, path and site are its
// lane's last ones.
func (t *tracer) record(tok *Token, end int64, comm string, c *Call) {
	lane := tok.lane()
	if t.closed.Load() {
		t.lanes.give(lane)
		t.dropped.Add(1)
		return
	}
	var errID uint32
	if c.Err != nil {
		errID = t.names.err(c.Err)
	}
	if lane >= maxLanes {
		commID, pathID := t.names.comm(comm), t.names.path(c.Alg, c.By)
		t.spillMu.Lock()
		t.spill = t.add(t.spill, tok, end, c, commID, pathID, 0, errID)
		t.spillMu.Unlock()
		return
	}
	lb := &t.lanes.bufs[lane]
	// A lane starts on the empty name of each kind, number 0.
	if !same(comm, lb.comm) {
		lb.comm, lb.commID = comm, t.names.comm(comm)
	}
	if !same(c.Alg, lb.alg) || !same(c.By, lb.by) {
		lb.alg, lb.by, lb.pathID = c.Alg, c.By, t.names.path(c.Alg, c.By)
	}
	if lb.pcs != lb.sitePCs {
		lb.sitePCs, lb.siteID = lb.pcs, t.names.site(&lb.pcs)
	}
	lb.batch = t.add(lb.batch, tok, end, c, lb.commID, lb.pathID, lb.siteID, errID)
	t.lanes.give(lane)
}

// add appends the record of a call to batch, holding a full batch. It
// writes the record's fields in place, one by one: a record built apart
// and copied in would be read back in wider pieces than it was written,
// which stalls the copy on every field.
func (t *tracer) add(batch []record, tok *Token, end int64, c *Call, comm, path, site, err uint32) []record {
	if batch == nil {
		batch = t.newBatch()
	}
	n := len(batch)
	batch = batch[:n+1]
	r := &batch[n]
	r.start, r.end, r.bytes = tok.start, end, c.Bytes
	r.peer, r.root, r.lane, r.op = int32(c.WorldPeer), int32(c.WorldRoot), tok.lane(), c.Op
	r.comm, r.path, r.site, r.err = comm, path, site, err
	if n+1 == cap(batch) {
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
func (t *tracer) hold(batch []record) {
	t.heldMu.Lock()
	t.held = append(t.held, batch)
	var out []record
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
// encodes any: 524 288 spans, 32 MiB.
var heldBatches = 128

func (t *tracer) newBatch() []record {
	if b, ok := t.free.Get().([]record); ok {
		return b[:0]
	}
	select {
	case b := <-t.spare:
		return b
	default:
		return make([]record, 0, batchSpans)
	}
}

// prepareBatches keeps a batch ready for the calls, its pages touched:
// a fresh batch's first write to each page is a fault of a few
// microseconds, which the calls would otherwise pay one in about seventy.
func (t *tracer) prepareBatches() {
	const perPage = 4096 / int(unsafe.Sizeof(record{}))
	for {
		b := make([]record, batchSpans)
		for i := 0; i < len(b); i += perPage {
			b[i].lane = -1
		}
		select {
		case t.spare <- b[:0]:
		case <-t.stop:
			return
		}
	}
}

// write is the writer goroutine. While the rank runs, the full batches
// beyond heldBatches go to the spill file as they are (a copy of memory,
// not 170 ns of encoding a span, which would hold the calls back once
// they come faster than that); once the tracer closes, it turns the
// spilled records, then the rest, into spans, naming their call sites,
// and hands them to the file.
func (t *tracer) write() {
	defer close(t.done)
	sites := map[uint32]string{}
	var sp spillFile
	defer sp.close()
	for b := range t.out {
		if !t.closed.Load() && sp.put(b) {
			t.free.Put(b[:0])
			continue
		}
		t.encodeSpilled(&sp, sites)
		t.encode(b, sites)
		t.free.Put(b[:0])
	}
	t.encodeSpilled(&sp, sites)
}

// encodeSpilled hands the spans spilled so far to the file.
func (t *tracer) encodeSpilled(sp *spillFile, sites map[uint32]string) {
	lost, err := sp.each(func(b []record) { t.encode(b, sites) })
	if err != nil {
		t.dropped.Add(lost)
		if t.werr == nil {
			t.werr = err
		}
	}
}

// encode hands the spans of b to the file.
func (t *tracer) encode(b []record, sites map[uint32]string) {
	at := t.clock.scale()
	for i := range b {
		if t.werr != nil {
			t.dropped.Add(int64(len(b) - i))
			return
		}
		t.werr = t.w.Write(t.span(&b[i], at, sites)) // on error the writer counts what it lost
	}
}

// spillFile keeps records, as they are in memory, in a temporary file
// unlinked at once (nothing is left behind, whatever ends the rank).
type spillFile struct {
	f      *os.File
	n      int64 // records written
	failed bool  // the file could not be made or written: encode instead
}

// put appends b's records and reports whether they are kept.
func (sp *spillFile) put(b []record) bool {
	if sp.failed || len(b) == 0 {
		return false
	}
	if sp.f == nil {
		f, err := os.CreateTemp("", "commtune-trace-spill-*")
		if err != nil {
			sp.failed = true
			return false
		}
		os.Remove(f.Name())
		sp.f = f
	}
	if _, err := sp.f.WriteAt(recordBytes(b), sp.n*recordSize); err != nil {
		sp.failed = true
		return false
	}
	sp.n += int64(len(b))
	return true
}

// each reads the records back, oldest first, a batch at a time, into f,
// and forgets them. A read that fails loses the rest: it returns how
// many, and why.
func (sp *spillFile) each(f func([]record)) (lost int64, err error) {
	if sp.n == 0 {
		return 0, nil
	}
	defer func() { sp.n = 0 }()
	buf := make([]record, batchSpans)
	for off := int64(0); off < sp.n; off += batchSpans {
		b := buf[:min(batchSpans, sp.n-off)]
		if _, err := sp.f.ReadAt(recordBytes(b), off*recordSize); err != nil {
			return sp.n - off, fmt.Errorf("reading the spans spilled to a temporary file: %w", err)
		}
		f(b)
	}
	return 0, nil
}

func (sp *spillFile) close() {
	if sp.f != nil {
		sp.f.Close()
	}
}

// recordSize is a record's size in memory and in the spill file.
const recordSize = int64(unsafe.Sizeof(record{}))

// recordBytes views b's records as bytes: they hold no pointers.
func recordBytes(b []record) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(b))), len(b)*int(recordSize))
}

// span is the trace's span of r, whose clock readings at turns into Now's;
// sites caches the call sites named.
func (t *tracer) span(r *record, at func(int64) int64, sites map[uint32]string) trace.Span {
	n := &t.names
	n.mu.Lock()
	comm, path, err := n.comms[r.comm], n.paths[r.path], n.errs[r.err]
	var pcs [sitePCs]uintptr
	s, named := sites[r.site]
	if !named {
		pcs = n.sites[r.site]
	}
	n.mu.Unlock()
	if !named {
		s = site(pcs)
		sites[r.site] = s
	}
	return trace.Span{Name: r.op.Name(), Cat: r.op.Cat(), Start: at(r.start) + t.offset, End: at(r.end) + t.offset, Lane: int(r.lane),
		Comm: comm, Bytes: r.bytes, Peer: int(r.peer), Root: int(r.root), Alg: path[0], By: path[1], Site: s, Err: err}
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
	// Oldest first: the full batches held, then the lanes' last ones.
	t.sendHeld()
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
	// Last: a call still recording after the wait may have held a batch.
	t.sendHeld()
	close(t.stop)
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

// sendHeld hands the held batches to the writer, oldest first.
func (t *tracer) sendHeld() {
	t.heldMu.Lock()
	defer t.heldMu.Unlock()
	for _, b := range t.held {
		t.out <- b
	}
	t.held = nil
}

// site names the program's call among pcs ("file.go:42 pkg.Func"): the
// first frame outside the library's own packages ("" if every frame kept
// is the library's).
func site(pcs [sitePCs]uintptr) string {
	if pcs[0] == 0 {
		return ""
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
	pcs   [sitePCs]uintptr // the call site of the lane's call in flight
	batch []record
	// The lane's last communicator, path and call site, and their numbers
	// in the tracer's names.
	comm    string
	commID  uint32
	alg, by string
	pathID  uint32
	sitePCs [sitePCs]uintptr
	siteID  uint32
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
