package comm

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/commtune/commtune/internal/coll"
	"github.com/commtune/commtune/internal/config"
	"github.com/commtune/commtune/internal/core"
	"github.com/commtune/commtune/internal/tune"
)

// Run-time selection of collective algorithms by the lottery scheduler
// (seed 001 §6), for blocking calls whose algorithm nobody forced:
//
//   - Calls are grouped by key (tune.Key: operation, ranks, size class,
//     commutativity, transports). Each key has a few candidates
//     (coll.Candidates), the fixed table's choice first.
//   - Rank 0 draws a candidate and a TTL; every rank runs the drawn
//     algorithm for TTL calls of that key (a window), counting them alike,
//     then moves to the next window's draw.
//   - Rank 0 records, per window, the slowest rank's mean time per call:
//     one figure for the whole group. The root's own time alone would be
//     free but biased: in a broadcast the root is done when its sends
//     have left, before the ranks that finish last.
//
// The agreement costs no wait in the steady state. Rank 0 draws one
// window ahead: at the start of window w it sends every rank the choice
// for window w+1, so a rank starting a window finds its choice already
// delivered. Each rank sends rank 0 its time in window w-1 when it starts
// window w, and rank 0 collects those reports one window later, at the
// start of window w+1, when they have long arrived; the lottery thus
// learns two windows late, which costs nothing but a little reaction time.
// Only the first window of a key is a round trip.
//
// A window whose algorithm differs from the last window's does not time
// its first call (every rank knows both, so their counts agree). Here a
// collective's first call after another algorithm ran took up to nine
// times its steady time (at 1 MiB on 4 ranks over shm, 13 ms against 1.4;
// the next ones up to twice), which samples of short windows would charge
// to the newcomer; with
// a lottery TTL of at least two calls (tune.LotteryConfig.MinTTL) every
// window still times some.
//
// A candidate's first window on a communicator is run but not recorded:
// a first call pays once for its schedule, its buffers and, over TCP, the
// connections to peers it has not talked to yet. Here that made first
// calls at 1 MiB up to ten times the steady time, enough to exclude the
// best candidate as hopeless on one sample (tune.LotteryConfig.Hopeless).
// The lottery, having no sample, draws the candidate again as untried.
//
// Each key's messages have their own tag of the collective context
// (tagSelectFirst + the key's number, in the order the communicator's
// ranks first call it, which is the same everywhere since blocking
// collective calls are), so keys drawn in any interleaving never match
// each other's messages. Nonblocking calls, and calls whose algorithm is
// forced, run the table's or the forced algorithm and neither draw nor
// record.
const tagSelectFirst = 1 << 28

// Draw messages, little-endian: a report [trimmed mean ns u64][calls u64]
// of its timed calls in a window from each rank to rank
// 0, a choice [candidate u32][count u32][TTL u32][size class u32]
// [call u64] from rank 0 to each rank. count, the number
// of candidates rank 0 drew among, lets a rank with another list fail
// instead of running something else; the size class and the call's hash
// (of the operation, the number of ranks and commutativity) let a rank
// that calls something else tell why. Keys are numbered in the order
// ranks first call them, so a rank calling another size class or another
// operation than rank 0 reads a choice meant for another key, or none:
// the signature watch ends that wait (collcheck.go).
const (
	reportSize = 16
	choiceSize = 24
	// windowsKept is how many windows' records rank 0 keeps: the window
	// being drawn for, the one running, the one whose reports are due.
	windowsKept = 3
)

// A window of short calls stands for windowSpan / (its candidate's
// average) times the lottery's TTL: each window costs a choice sent to
// every rank and a report back, which against 1 µs bcasts cost a quarter
// of the time at a TTL of 8.
//
// A window's figure, on each rank, is the mean of its timed calls but the
// longest of every trimEvery (at most trimMost), and the group's the
// largest of the ranks' figures. A mean is what a program pays: a median,
// or the first calls of a long window alone, hid the tails of pipelined
// algorithms (64 KiB Bcasts in 4 KiB segments on 2 ranks: median 10.8 µs,
// mean 28.6, against 9.4 for the best unsegmented one; the lottery,
// judging by medians, settled on them), and so did counting each call at
// most 8× the median (in 16 KiB segments: median 6.7, mean 19, learned
// as the fastest). Leaving out the longest few keeps the odd call that a
// descheduled rank or a page fault stretched (on 4 ranks over 2
// processors one in a few hundred took 10–100× the median) from charging
// the algorithm a stall, while a tail of the algorithm's own, one call in
// twenty or so, counts.
//
// A rival's window is judged against the leader's latest window (paired,
// at most pairedWindows windows apart): its figure is scaled by the
// leader's average over that window's figure before it is recorded, so a
// slow spell of the machine that covered both does not count against the
// rival, nor a quick one for it.
const (
	windowSpan    = 100 * time.Microsecond
	trimEvery     = 64
	trimMost      = 8
	pairedWindows = 4
)

// windowFigure is one rank's report of one window: the trimmed mean of
// its timed calls, and how many.
type windowFigure struct {
	mean  time.Duration
	calls int
}

// timed adds d, the time of one timed call of the current window.
func (s *selection) timed(d time.Duration) {
	s.sum += d
	s.calls++
	// Keep the trimMost longest, longest first.
	i := len(s.longest)
	if i < trimMost {
		s.longest = append(s.longest, d)
	} else if d <= s.longest[i-1] {
		return
	} else {
		i--
		s.longest[i] = d
	}
	for ; i > 0 && s.longest[i-1] < s.longest[i]; i-- {
		s.longest[i-1], s.longest[i] = s.longest[i], s.longest[i-1]
	}
}

// figure returns this rank's report of its current window.
func (s *selection) figure() windowFigure {
	if s.calls == 0 {
		return windowFigure{}
	}
	k := min(s.calls/trimEvery, trimMost)
	sum := s.sum
	for _, d := range s.longest[:k] {
		sum -= d
	}
	return windowFigure{mean: sum / time.Duration(s.calls-k), calls: s.calls}
}

// collSelector is a communicator's selection state.
type collSelector struct {
	keys      map[tune.Key]*selection
	single    map[tune.Key]bool // keys with one candidate: the lottery does not draw
	transport string            // the transports the communicator's members reach each other by
	recvs     []coll.Msg
	sends     []coll.Msg
	// unsent are the selections whose sends (choices, reports) may not
	// all have been handed back: a key drawn again only after many calls
	// of others would keep its finished requests meanwhile, and a
	// communicator meeting hundreds of keys would keep thousands.
	unsent []*selection
}

// HeldSends counts the selection's sends (choices, reports) this rank
// has not handed back: the requests its selection state keeps alive.
func (c *Comm) HeldSends() int {
	c.mu.Lock()
	sl := c.sel
	c.mu.Unlock()
	if sl == nil {
		return 0
	}
	n := 0
	for _, s := range sl.keys {
		for _, p := range s.pending {
			n += len(p)
		}
		for _, q := range s.reportSend {
			if q != nil {
				n++
			}
		}
	}
	return n
}

// handBack hands back the finished sends of the selections that made
// some, so that a key's sends last about as long as the messages do.
// A send that failed stays, for the key's next draw to report.
func (sl *collSelector) handBack(c *Comm) {
	kept := sl.unsent[:0]
	for _, s := range sl.unsent {
		if s.handBack(c) {
			kept = append(kept, s)
		} else {
			s.queued = false
		}
	}
	clear(sl.unsent[len(kept):])
	sl.unsent = kept
}

// sent notes that s made sends (handBack).
func (sl *collSelector) sent(s *selection) {
	if !s.queued {
		s.queued = true
		sl.unsent = append(sl.unsent, s)
	}
}

// handBack hands back s's finished sends and reports whether any is left.
func (s *selection) handBack(c *Comm) bool {
	left := false
	for i := range s.pending {
		kept := s.pending[i][:0]
		for _, q := range s.pending[i] {
			if !handBackSend(c, q) {
				kept = append(kept, q)
			}
		}
		clear(s.pending[i][len(kept):])
		s.pending[i] = kept
		left = left || len(kept) > 0
	}
	for i, q := range s.reportSend {
		switch {
		case q == nil:
		case handBackSend(c, q):
			s.reportSend[i] = nil
		default:
			left = true
		}
	}
	return left
}

// handBackSend hands back q if it finished without error, and reports
// whether it did.
func handBackSend(c *Comm, q *core.Request) bool {
	if _, done, err := q.Test(); done && err == nil {
		c.ep.Eng.Release(q)
		return true
	}
	return false
}

// selection is one key's state on this rank.
type selection struct {
	key     tune.Key
	tag     int
	sigName string // the call signature's algorithm part: "allreduce/lottery"
	call    uint64 // hash of the key's operation, ranks and commutativity
	cands   []coll.Algorithm
	names   []string
	window  int // windows begun so far
	drawn   int // index in cands of the current window's algorithm
	left    int // calls of the current window still to run
	// settle is set for a window whose algorithm differs from the last
	// window's: its first call runs but is not timed (see tagSelectFirst).
	settle bool
	calls  int // this rank's timed calls in the current window
	// sum is their total time; longest the trimMost longest of them,
	// longest first, in a buffer of that capacity.
	sum     time.Duration
	longest []time.Duration
	// Rank 0: per window (mod windowsKept) the candidate drawn, its TTL,
	// its own time and calls; the choices in flight, with their sends;
	// the reports due.
	plan    [windowsKept]struct{ idx, ttl int }
	own     [windowsKept]windowFigure
	choice  [2][]byte
	pending [2][]*core.Request
	reports []byte
	warm    []bool // per candidate: a window of it has run (see tagSelectFirst)
	// lead is the figure of the leader's latest recorded window, and
	// which window that was: what a rival's window is paired with.
	lead     time.Duration
	leadName string
	leadWin  int
	// Other ranks: the reports in flight, with their sends; the choice
	// received is read into choice[0].
	report     [2][]byte
	reportSend [2]*core.Request
	queued     bool // in the communicator's unsent
}

// selection returns k's key state if the lottery chooses k's algorithm,
// else nil.
func (k *Call) selection() *selection {
	c := k.x.c
	if !k.auto || !k.blocking || c.ep.Lottery == nil || len(c.group) < 2 {
		return nil
	}
	sl := c.selector()
	key := tune.Key{
		Op: string(k.op), Ranks: len(c.group), SizeClass: tune.SizeClass(k.layout.Bytes),
		Commutative: k.commutative && reduces(k.op), Transports: sl.transport,
	}
	s := sl.keys[key]
	if s == nil {
		if sl.single[key] {
			return nil
		}
		cands := c.candidates(k.op, k.layout.Bytes, k.commutative)
		if len(cands) < 2 {
			sl.single[key] = true // nothing to draw: the table's choice runs
			return nil
		}
		s = &selection{key: key, tag: tagSelectFirst + len(sl.keys), sigName: string(k.op) + "/lottery", call: callHash(key), cands: cands}
		for _, a := range cands {
			s.names = append(s.names, a.Name())
		}
		sl.keys[key] = s
	}
	return s
}

// candidates returns the lottery's candidates for a call of op moving
// bytes: where the sampled table applies, the algorithms it measured close
// to the fastest (coll.Table.Rivals), pulled as Algorithm would pull them,
// since measured rivals beat a fixed list; else the fixed list
// (coll.Candidates) led by the table's choice as Algorithm makes it
// (pulled where the job's pull range says), with the hierarchical
// algorithm on ranks of several nodes, and, where the ranks are processes
// of one node reading each other's memory (every rank sees the same, so
// the lists agree), each one's twin with the other way of moving data: the
// pull range is decided per number of ranks and processors, and a size or
// an algorithm can go against it (2 ranks on 2 processors, which never
// pull by the range: 64 KiB Bcasts pulled took 0.79× the time, 1 MiB
// ones 2.2×; the best 1 MiB Allreduce was Rabenseifner's pulled).
func (c *Comm) candidates(op coll.Operation, bytes int, commutative bool) []coll.Algorithm {
	t := c.sampledTable()
	if t == nil || len(t.Points(op, len(c.group))) == 0 {
		fixed := coll.Candidates(op, len(c.group), bytes, commutative)
		first, _, err := c.Algorithm(op, bytes, commutative, Options{})
		if err != nil || first.IsDirect() || first.IsHierarchical() {
			first = fixed[0]
		}
		cands := []coll.Algorithm{first}
		for _, a := range fixed {
			if !slices.Contains(cands, a) {
				cands = append(cands, a)
			}
		}
		if op != coll.OpReduce && bytes >= pullTwinMin && c.onNode.get(c.allShm) && c.readsPeers() {
			for _, a := range cands { // the list as it was: twins get no twin
				if twin := a; twin.Pulls() {
					twin.Pull = !twin.Pull
					if !slices.Contains(cands, twin) {
						cands = append(cands, twin)
					}
				}
			}
		}
		if a, ok := coll.HierarchicalAlgorithm(op); ok && c.hierarchyPays(op, bytes, commutative) {
			// Ranks on several nodes: the hierarchical algorithm competes
			// where the table would take it.
			cands = append(cands, a)
		}
		return cands
	}
	cands := t.Rivals(op, len(c.group), bytes, commutative)
	out := make([]coll.Algorithm, 0, len(cands))
	for _, a := range cands {
		a.Pull = a.Pull && c.pullsSampled(bytes)
		if !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	return out
}

// pullTwinMin is the smallest call whose candidates the lottery also
// tries pulled (or not): below it a read across costs more than the copy
// it saves on every number of ranks measured.
const pullTwinMin = 16 << 10

// callHash is the FNV-1a hash of what ranks must agree on in k besides
// its size class: the transports are each rank's own view.
func callHash(k tune.Key) uint64 {
	h := uint64(14695981039346656037)
	for _, b := range []byte(fmt.Sprintf("%s/%d/%t", k.Op, k.Ranks, k.Commutative)) {
		h = (h ^ uint64(b)) * 1099511628211
	}
	return h
}

func reduces(op coll.Operation) bool { return op.Reduces() }

// selector returns c's selection state, made on first use. Blocking
// collective calls on a communicator are made one at a time, so the
// state needs no lock of its own.
func (c *Comm) selector() *collSelector {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sel == nil {
		c.sel = &collSelector{keys: map[tune.Key]*selection{}, single: map[tune.Key]bool{}, transport: c.TransportMix()}
	}
	return c.sel
}

// TransportMix names how c's members reach each other, as rank 0 sees it
// (job.Endpoint.TransportMix). Only rank 0 draws and records, so its view
// is the key's.
func (c *Comm) TransportMix() string { return c.ep.TransportMix(c.group) }

// choose sets k's algorithm for this call: the current draw's while it
// lasts, else a new draw agreed with rank 0.
func (k *Call) choose(ctx context.Context, s *selection) error {
	if s.left == 0 {
		if err := k.draw(ctx, s); err != nil {
			return err
		}
	}
	s.left--
	c := k.x.c
	alg := s.cands[s.drawn]
	p, err := c.plan(k.op, alg, k.layout, k.commutative)
	if err != nil {
		return err
	}
	k.alg, k.plan, k.sched = alg, p, &p.sched
	return nil
}

// draw starts the key's next window (see tagSelectFirst).
func (k *Call) draw(ctx context.Context, s *selection) error {
	c := k.x.c
	x := k.x // the call's exchanger, on the key's tag
	x.tag = s.tag
	defer func() { k.x.reqs, k.x.runner = x.reqs, x.runner }()
	prev := s.drawn
	sl := c.sel
	sl.handBack(c)
	var err error
	if c.rank == 0 {
		err = s.drawAhead(ctx, c, &x)
	} else {
		err = s.follow(ctx, c, &x)
	}
	sl.sent(s)
	if err != nil {
		return err
	}
	s.window++
	s.calls, s.sum, s.longest = 0, 0, s.longest[:0]
	s.settle = s.window == 1 || s.drawn != prev
	return nil
}

// drawAhead is rank 0's part of starting window w = s.window: keep its
// own time in window w-1, record window w-2 from every rank's report,
// then draw window w+1 and send it (with window w itself, the first
// time).
func (s *selection) drawAhead(ctx context.Context, c *Comm, x *exchanger) error {
	n, w := len(c.group), s.window
	if s.reports == nil {
		s.reports = make([]byte, reportSize*n)
		for i := range s.choice {
			s.choice[i] = make([]byte, choiceSize)
		}
	}
	if w >= 1 {
		s.own[(w-1)%windowsKept] = s.figure()
	}
	if w >= 2 {
		if err := s.record(ctx, c, x, w-2); err != nil {
			return err
		}
	}
	if w == 0 {
		if err := s.drawFor(ctx, c, 0); err != nil {
			return err
		}
	}
	if err := s.drawFor(ctx, c, w+1); err != nil {
		return err
	}
	p := s.plan[w%windowsKept]
	s.drawn, s.left = p.idx, p.ttl
	return nil
}

// record gathers every rank's report of window v and records the slowest
// rank's mean time per call for the candidate that ran it.
func (s *selection) record(ctx context.Context, c *Comm, x *exchanger, v int) error {
	sl := c.sel
	recvs := sl.recvs[:0]
	for r := 1; r < len(c.group); r++ {
		recvs = append(recvs, coll.Msg{Peer: r, Buf: s.reports[reportSize*r : reportSize*(r+1)]})
	}
	err := x.Exchange(ctx, recvs, nil)
	clear(recvs)
	sl.recvs = recvs[:0]
	if err != nil {
		return err
	}
	own := s.own[v%windowsKept]
	idx := s.plan[v%windowsKept].idx
	if s.warm == nil {
		s.warm = make([]bool, len(s.cands))
	}
	if !s.warm[idx] {
		s.warm[idx] = true
		return nil // the candidate's first window: warming up
	}
	if own.calls == 0 {
		return nil
	}
	worst := own.mean
	for r := 1; r < len(c.group); r++ {
		b := s.reports[reportSize*r:]
		f := windowFigure{mean: time.Duration(binary.LittleEndian.Uint64(b)), calls: int(binary.LittleEndian.Uint64(b[8:]))}
		if f.calls != own.calls {
			return nil // a failed call on some rank: no figure for the whole group
		}
		worst = max(worst, f.mean)
	}
	name := s.names[idx]
	leader, ok := c.ep.Lottery.Best(s.key, s.names)
	switch {
	case ok && name == leader:
		s.lead, s.leadName, s.leadWin = worst, name, v
	case ok && s.leadName == leader && s.lead > 0 && v-s.leadWin <= pairedWindows:
		if avg, ok := c.ep.Lottery.Average(s.key, leader); ok {
			worst = time.Duration(float64(worst) * float64(avg) / float64(s.lead))
		}
	}
	c.ep.Lottery.Record(s.key, name, worst)
	return nil
}

// drawFor draws window v's candidate and TTL and sends them to every rank
// without waiting: the buffer's previous sends, two windows old, have
// long left.
func (s *selection) drawFor(ctx context.Context, c *Comm, v int) error {
	ch := c.ep.Lottery.Choose(s.key, s.names)
	idx := 0
	for i, name := range s.names {
		if name == ch.Impl {
			idx = i
		}
	}
	ttl := max(ch.TTL, 1)
	if avg, ok := c.ep.Lottery.Average(s.key, ch.Impl); ok && avg > 0 && avg < windowSpan {
		// Short calls: a window of the lottery's TTL lasts windowSpan
		// or so, since each window costs the agreement's messages.
		ttl *= int(windowSpan / avg)
	}
	ttl = min(ttl, config.MaxTTL)
	s.plan[v%windowsKept] = struct{ idx, ttl int }{idx, ttl}
	buf, sends := s.choice[v%2], s.pending[v%2]
	if err := settle(ctx, c, sends); err != nil {
		return err
	}
	sends = sends[:0]
	binary.LittleEndian.PutUint32(buf, uint32(idx))
	binary.LittleEndian.PutUint32(buf[4:], uint32(len(s.cands)))
	binary.LittleEndian.PutUint32(buf[8:], uint32(ttl))
	binary.LittleEndian.PutUint32(buf[12:], uint32(s.key.SizeClass))
	binary.LittleEndian.PutUint64(buf[16:], s.call)
	for r := 1; r < len(c.group); r++ {
		q, err := c.isendTemp(buf, r, s.tag, c.collCtx, false)
		if err != nil {
			return err
		}
		sends = append(sends, q)
	}
	s.pending[v%2] = sends
	return nil
}

// follow is another rank's part of starting window w = s.window: send
// rank 0 its time in window w-1, then take window w's choice, sent by
// rank 0 a window ago.
func (s *selection) follow(ctx context.Context, c *Comm, x *exchanger) error {
	w := s.window
	if w >= 1 {
		i := (w - 1) % 2
		if s.report[i] == nil {
			s.report[i] = make([]byte, reportSize)
		}
		if q := s.reportSend[i]; q != nil {
			s.reportSend[i] = nil
			if err := settle(ctx, c, []*core.Request{q}); err != nil {
				return err
			}
		}
		f := s.figure()
		binary.LittleEndian.PutUint64(s.report[i], uint64(f.mean))
		binary.LittleEndian.PutUint64(s.report[i][8:], uint64(f.calls))
		q, err := c.isendTemp(s.report[i], 0, s.tag, c.collCtx, false)
		if err != nil {
			return err
		}
		s.reportSend[i] = q
	}
	sl := c.sel
	if s.choice[0] == nil {
		s.choice[0] = make([]byte, choiceSize)
	}
	choice := s.choice[0]
	recvs := append(sl.recvs[:0], coll.Msg{Peer: 0, Buf: choice})
	err := x.Exchange(ctx, recvs, nil)
	clear(recvs)
	sl.recvs = recvs[:0]
	if err != nil {
		return err
	}
	idx := int(binary.LittleEndian.Uint32(choice))
	count := int(binary.LittleEndian.Uint32(choice[4:]))
	ttl := int(binary.LittleEndian.Uint32(choice[8:]))
	class, call := int(binary.LittleEndian.Uint32(choice[12:])), binary.LittleEndian.Uint64(choice[16:])
	switch {
	case call != s.call:
		return fmt.Errorf("%w: rank 0 drew an algorithm for another collective call than this rank's %s (do all ranks make the same calls?)",
			core.ErrSizeMismatch, s.key)
	case class != s.key.SizeClass:
		return fmt.Errorf("%w: rank 0 calls %s with a message of size class 2^%d, this rank with 2^%d (do all ranks pass the same sizes?)",
			core.ErrSizeMismatch, s.key.Op, class, s.key.SizeClass)
	}
	if count != len(s.cands) || idx >= count || ttl < 1 || ttl > config.MaxTTL {
		return fmt.Errorf("%w: rank 0 chose candidate %d of %d for %d calls of %s, where this rank has %d candidates (do all ranks set %s alike?)",
			core.ErrSizeMismatch, idx, count, ttl, s.key, len(s.cands), config.EnvCollSelect)
	}
	s.drawn, s.left = idx, ttl
	return nil
}

// settle waits for sends made with isendTemp, long since gone in the
// steady state, and hands their requests back.
func settle(ctx context.Context, c *Comm, sends []*core.Request) error {
	var errs []error
	for _, r := range sends {
		if _, err := c.block(ctx, r); err != nil {
			errs = append(errs, err)
			continue // a request the wait withdrew is not to be released
		}
		c.ep.Eng.Release(r)
	}
	return errors.Join(errs...)
}

// Drawn returns, for the lottery's key, the candidate its current draw
// runs, false before any draw (on this rank: rank 0 draws, the others
// follow).
func (c *Comm) Drawn(key tune.Key) (string, bool) {
	sl := c.sel
	if sl == nil {
		return "", false
	}
	s := sl.keys[key]
	if s == nil || s.drawn < 0 {
		return "", false
	}
	return s.names[s.drawn], true
}

// Selected returns how many keys the lottery has selected for on c.
func (c *Comm) Selected() int {
	if c.sel == nil {
		return 0
	}
	return len(c.sel.keys)
}
