package observe

import (
	"context"
	"fmt"
	"runtime/pprof"
	rtrace "runtime/trace"
	"sync/atomic"
	"unsafe"

	"github.com/commtune/commtune/internal/trace"
)

// Recorder observes one rank's calls: it feeds the communicators'
// counters and, when tracing, the rank's timeline. A nil Recorder, or one
// with nothing on, costs a call one branch.
type Recorder struct {
	// mode is what a call records (mode* bits): read once by Begin, and
	// settable while calls run (Observe).
	mode atomic.Uint32
	tr   *tracer // the timeline's writer, from StartTrace
	rank int
	// labelled holds, per operation, a context carrying the labels
	// {commtune: op, rank: R}, made once.
	labelled [maxOps]context.Context
}

// Token is what Begin gives End: what the call records, and when it
// began if it is timed. Three words, each written whole: a call passes it
// up through its layers in registers, and a copy never waits on a store
// of another width.
type Token struct {
	// bits packs mode (mode* bits, 0: nothing), timed (start was read),
	// the call's operation and, when traced, its lane on the timeline.
	bits   uint64
	start  int64
	region *rtrace.Region
}

const (
	tokMode  = 0xff   // mode bits
	tokTimed = 1 << 8 // start was read
	tokOp    = 16     // the operation's shift, 16 bits
	tokLane  = 32     // the lane's shift, 32 bits
)

func (t *Token) mode() uint32 { return uint32(t.bits & tokMode) }
func (t *Token) timed() bool  { return t.bits&tokTimed != 0 }
func (t *Token) lane() int32  { return int32(t.bits >> tokLane) }

// Op is the operation Begin was given.
func (t *Token) Op() Op { return Op(t.bits >> tokOp) }

// sitePCs is how many return addresses a traced call keeps: enough to
// climb out of the library's wrappers to the program's call.
const sitePCs = 6

// Call describes a finished call for End.
type Call struct {
	Op        Op
	Bytes     int64 // this rank's payload; <0 none
	Peer      int   // rank in the communicator (point-to-point), else -1
	Send      bool  // Peer is the destination (a send), not the source
	WorldPeer int   // the peer's world rank, observe.AnyPeer, or NoRank
	WorldRoot int   // a rooted collective's root, world rank, or NoRank
	Alg, By   string
	Err       error
}

// NoRank marks a span's peer or root absent; AnyPeer is a receive from any
// source.
const (
	NoRank  = -2
	AnyPeer = -1
)

// Begin starts observing a call of op on s (whose counters count it).
func (r *Recorder) Begin(op Op, s Subject) Token {
	if r.CountingOnly() {
		return s.Counters().Begin(op)
	}
	return r.begin(op, s)
}

// CountingOnly reports whether calls are counted and nothing else is
// recorded (the default): a call then begins with Counters.Begin and, if
// its token is Counted, ends with Counters.End, the fewest steps.
func (r *Recorder) CountingOnly() bool {
	return r != nil && r.mode.Load() == modeCount && !rtrace.IsEnabled()
}

func (r *Recorder) begin(op Op, s Subject) Token {
	t := Token{bits: uint64(op) << tokOp}
	if rtrace.IsEnabled() {
		t.region = rtrace.StartRegion(context.Background(), regionNames[op])
	}
	if r == nil {
		return t
	}
	m := r.mode.Load()
	if m == 0 {
		return t
	}
	t.bits |= uint64(m)
	timed := m&modeTrace != 0
	if m&modeCount != 0 && s.Counters().begin(op) {
		timed = true
	}
	if m&modeTrace != 0 {
		lane := r.tr.lanes.take()
		t.bits |= uint64(uint32(lane)) << tokLane
		if lane < maxLanes {
			callSite(&r.tr.lanes.bufs[lane].pcs)
		}
	}
	if m&modeLabels != 0 {
		pprof.SetGoroutineLabels(r.labelled[op])
	}
	switch {
	case m&modeTrace != 0:
		t.bits |= tokTimed
		t.start = r.tr.clock.now()
	case timed:
		t.bits |= tokTimed
		t.start = Now()
	}
	return t
}

// Subject is what a call is made on: a communicator, whose counters
// count it and whose label names it in the timeline.
type Subject interface {
	Counters() *Counters
	Label() string
}

// On reports whether t observes anything: End has work to do.
func (r *Recorder) On(t Token) bool { return t.On() }

// On reports whether the call t stands for is observed: End has work to
// do. Checking it before building End's Call keeps a call that records
// nothing at the cost of this test.
func (t *Token) On() bool { return t.bits&tokMode != 0 || t.region != nil }

// End finishes observing the call Begin started, counting it on s's
// counters and recording its span. ctx is the program's context for the
// call, whose pprof labels the goroutine gets back.
func (r *Recorder) End(ctx context.Context, t Token, s Subject, c *Call) {
	if t.region != nil {
		t.region.End()
	}
	m := t.mode()
	if m == 0 {
		return
	}
	var end, d int64
	switch {
	case m&modeTrace != 0: // on the timeline's clock
		end = r.tr.clock.now()
		d = r.tr.clock.nanos(end - t.start)
	case t.timed():
		end = Now()
		d = end - t.start
	}
	if m&modeCount != 0 {
		cs := s.Counters()
		cs.end(c.Op, c.Bytes, t.timed(), d, c.Alg, c.By)
		if c.Peer >= 0 && c.Err == nil {
			cs.addPeer(c.Peer, c.Send, c.Bytes)
		}
	}
	if m&modeTrace != 0 {
		r.tr.record(&t, end, s.Label(), c)
	}
	if m&modeLabels != 0 {
		if ctx == nil {
			ctx = context.Background()
		}
		pprof.SetGoroutineLabels(ctx)
	}
}

// Counted reports whether the call t stands for is counted and nothing
// else (no timeline, labels or region): Counters.End finishes it.
func (t *Token) Counted() bool { return t.bits&tokMode == modeCount && t.region == nil }

// Begin counts a call of op, when the recorder counts alone
// (CountingOnly).
func (cs *Counters) Begin(op Op) Token {
	t := Token{bits: uint64(op)<<tokOp | modeCount}
	if cs.begin(op) {
		t.bits |= tokTimed
		t.start = Now()
	}
	return t
}

// End ends the observation t of a call that is counted and nothing else
// (Counted), with the Call Recorder.End would be given reduced to what the
// counters keep: a small collective's common case, without building that
// Call.
func (cs *Counters) End(t Token, bytes int64, alg, by string) {
	if !t.timed() {
		// The common case, inlined: the size and path of the
		// operation's first call again.
		o := &cs.ops[t.Op()]
		if f := o.first.Load(); f != nil && o.size0.Load() == bytes &&
			unsafe.StringData(f.alg) == unsafe.StringData(alg) && unsafe.StringData(f.by) == unsafe.StringData(by) &&
			len(f.alg) == len(alg) && len(f.by) == len(by) {
			return
		}
	}
	cs.endFull(t, bytes, alg, by)
}

// endFull is End for every case.
func (cs *Counters) endFull(t Token, bytes int64, alg, by string) {
	var d int64
	if t.timed() {
		d = Now() - t.start
	}
	cs.end(t.Op(), bytes, t.timed(), d, alg, by)
}

// LabelGoroutine gives the calling goroutine, one the library started to
// run a call of op, the pprof labels {commtune: op, rank: R}.
func (r *Recorder) LabelGoroutine(op Op) {
	if r != nil {
		pprof.SetGoroutineLabels(r.labelled[op])
	}
}

// What a call records (Recorder.mode).
const (
	modeCount  = 1 << iota // counters
	modeTrace              // a span on the timeline
	modeLabels             // pprof labels for its time
)

// Active reports whether a call would record anything, or be a region of
// the program's execution trace: Begin has work to do.
func (r *Recorder) Active() bool { return (r != nil && r.mode.Load() != 0) || rtrace.IsEnabled() }

// Counting reports whether the recorder counts calls.
func (r *Recorder) Counting() bool { return r != nil && r.mode.Load()&modeCount != 0 }

// Observe sets whether the calls made from now on count and, when a
// timeline is being written, trace: for the benchmark that measures what
// each costs against calls that record nothing.
func (r *Recorder) Observe(count, trace bool) {
	for {
		old := r.mode.Load()
		m := old &^ (modeCount | modeTrace)
		if count {
			m |= modeCount
		}
		if trace && r.tr != nil {
			m |= modeTrace
		}
		if r.mode.CompareAndSwap(old, m) {
			return
		}
	}
}

// regionNames are the runtime/trace regions of each operation
// ("commtune.Allreduce"), made once.
var regionNames [maxOps]string

// Label runs f with the pprof labels of the library's own goroutines
// ({commtune: role, rank: R}): CPU profiles and execution traces tell the
// library's background work from the program's.
func Label(rank int, role string, f func()) {
	pprof.Do(context.Background(), pprof.Labels("commtune", role, "rank", itoa(rank)), func(context.Context) { f() })
}

// NewRecorder returns rank's recorder: counting calls if count, switching
// pprof labels around each call if labels. Tracing starts later
// (StartTrace), once the job's clocks are aligned.
func NewRecorder(rank int, count, labels bool) *Recorder {
	r := &Recorder{rank: rank}
	if count {
		r.mode.Store(modeCount)
	}
	if labels {
		r.mode.Store(r.mode.Load() | modeLabels)
	}
	for op := range numOps {
		r.labelled[op] = pprof.WithLabels(context.Background(), pprof.Labels("commtune", op.Name(), "rank", itoa(rank)))
	}
	return r
}

// StartTrace starts writing the rank's timeline into dir (docs/trace.md),
// before the rank makes any call: offset moves this rank's clock (Now) to
// the job's.
func (r *Recorder) StartTrace(dir string, info trace.RankInfo, offset int64) error {
	w, err := trace.Create(dir, info)
	if err != nil {
		return fmt.Errorf("commtune: COMMTUNE_TRACE: %w", err)
	}
	r.tr = newTracer(w, r.rank, offset)
	r.mode.Store(r.mode.Load() | modeTrace)
	return nil
}

// StopTrace ends the timeline: the spans recorded are written and the file
// takes its name. Calls after it are not traced (their spans count as
// dropped if they were begun before).
func (r *Recorder) StopTrace() error {
	if r == nil || r.tr == nil {
		return nil
	}
	r.mode.Store(r.mode.Load() &^ modeTrace)
	return r.tr.close(Now() + r.tr.offset)
}
