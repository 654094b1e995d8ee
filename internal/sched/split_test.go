package sched

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/commtune/commtune/internal/driver"
)

const (
	mib = 1 << 20
	lat = 30e3 // ns
)

// ends returns each rail's predicted end (busy + Predict(chunk); 0 for no
// chunk).
func ends(models []*RailModel, busy []float64, chunks []int) []float64 {
	e := make([]float64, len(chunks))
	for i, c := range chunks {
		if c > 0 {
			e[i] = models[i].Predict(c)
			if i < len(busy) {
				e[i] += busy[i]
			}
		}
	}
	return e
}

func sum(xs []int) int {
	n := 0
	for _, x := range xs {
		n += x
	}
	return n
}

func checkPlan(t *testing.T, chunks []int, n int) {
	t.Helper()
	if sum(chunks) != n {
		t.Fatalf("chunks %v add up to %d, not %d", chunks, sum(chunks), n)
	}
	for _, c := range chunks {
		if c < 0 {
			t.Fatalf("negative chunk in %v", chunks)
		}
	}
}

// TestSplitTwoRails: two rails of 100 and 50 MB/s, same latency, all idle:
// the curves and weighted rules give 2:1, iso gives 1:1.
func TestSplitTwoRails(t *testing.T) {
	models := []*RailModel{linearModel(t, lat, 100), linearModel(t, lat, 50)}
	const n = 12 * mib
	tests := []struct {
		rule  SplitRule
		ratio float64 // chunks[0] / chunks[1]
		tol   float64
	}{
		{SplitCurves, 2, 0.005},
		{SplitWeighted, 2, 0.005},
		{SplitIso, 1, 0},
	}
	for _, tc := range tests {
		t.Run(Split{Rule: tc.rule}.Name(), func(t *testing.T) {
			chunks, finish := PlanSplit(tc.rule, models, nil, n, 0)
			checkPlan(t, chunks, n)
			r := float64(chunks[0]) / float64(chunks[1])
			if math.Abs(r-tc.ratio) > tc.tol*tc.ratio {
				t.Fatalf("chunks %v: ratio %.4f, want %v", chunks, r, tc.ratio)
			}
			e := ends(models, nil, chunks)
			if want := max(e[0], e[1]); finish != want {
				t.Fatalf("finish %v, want %v", finish, want)
			}
			if tc.rule == SplitCurves && !near(e[0], e[1], 0.01) {
				t.Fatalf("chunks %v end at %v and %v: not together", chunks, e[0], e[1])
			}
			t.Logf("%v: chunks %v, ends %.0f %.0f µs", tc.rule, chunks, e[0]/1e3, e[1]/1e3)
		})
	}
}

// TestDichotomyAgreesWithBisection: seed 002's two-rail dichotomy and the
// bisection on the finish time give the same split, busy rails included.
func TestDichotomyAgreesWithBisection(t *testing.T) {
	a, b := linearModel(t, lat, 100), linearModel(t, 2e3, 50)
	for _, n := range []int{256 << 10, mib, 3*mib + 7, 12 * mib, 100 * mib} {
		for _, busy := range [][2]float64{{0, 0}, {1e6, 0}, {0, 1e6}, {5e6, 2e6}} {
			in := [maxRails]railIn{{m: a, at: busy[0]}, {m: b, at: busy[1]}}
			use := [maxRails]bool{true, true}
			var out [maxRails]int
			solveCurves(&in, &use, 2, n, &out)
			if out[0]+out[1] != n {
				t.Fatalf("bisection gives %v for %d", out[:2], n)
			}
			na := dichotomy(RailState{Model: a, BusyFor: busy[0]}, RailState{Model: b, BusyFor: busy[1]}, n)
			if d := na - out[0]; d < -defaultMinChunk || d > defaultMinChunk {
				t.Fatalf("n %d busy %v: dichotomy %d, bisection %d", n, busy, na, out[0])
			}
			ea, eb := busy[0]+a.Predict(na), busy[1]+b.Predict(n-na)
			step := max(a.Predict(na+1)-a.Predict(na), b.Predict(n-na+1)-b.Predict(n-na))
			if na > 0 && na < n && math.Abs(ea-eb) > step {
				t.Fatalf("n %d busy %v: dichotomy ends %v and %v", n, busy, ea, eb)
			}
		}
	}
}

// TestCurvesBeatWeightedOnLatency: a rail with a 2 ms fixed cost gets its
// bandwidth's share from the weighted rule and finishes late; the curves
// rule accounts for the fixed cost.
func TestCurvesBeatWeightedOnLatency(t *testing.T) {
	models := []*RailModel{linearModel(t, 2e6, 100), linearModel(t, lat, 50)}
	const n = 1 * mib
	curves, tc := PlanSplit(SplitCurves, models, nil, n, 0)
	weighted, tw := PlanSplit(SplitWeighted, models, nil, n, 0)
	checkPlan(t, curves, n)
	checkPlan(t, weighted, n)
	t.Logf("curves %v end %.0f µs; weighted %v end %.0f µs", curves, tc/1e3, weighted, tw/1e3)
	if !(tc < tw) {
		t.Fatalf("curves %v (%v ns) not faster than weighted %v (%v ns)", curves, tc, weighted, tw)
	}
	if curves[0] >= weighted[0] {
		t.Fatalf("curves gives the slow-starting rail %d, weighted %d", curves[0], weighted[0])
	}
}

// TestSplitThreeRails: 100, 50 and 25 MB/s: chunks in proportion 4:2:1,
// and the curves rule finishes no later than the weighted one.
func TestSplitThreeRails(t *testing.T) {
	models := []*RailModel{linearModel(t, lat, 100), linearModel(t, lat, 50), linearModel(t, lat, 25)}
	const n = 12 * mib
	curves, tc := PlanSplit(SplitCurves, models, nil, n, 0)
	weighted, tw := PlanSplit(SplitWeighted, models, nil, n, 0)
	for _, chunks := range [][]int{curves, weighted} {
		checkPlan(t, chunks, n)
		for i, want := range []float64{4. / 7, 2. / 7, 1. / 7} {
			if got := float64(chunks[i]) / n; math.Abs(got-want) > 0.005*want {
				t.Fatalf("chunks %v: rail %d has %.4f, want %.4f", chunks, i, got, want)
			}
		}
	}
	if tc > tw {
		t.Fatalf("curves ends at %v, weighted at %v", tc, tw)
	}
	iso, _ := PlanSplit(SplitIso, models, nil, n, 0)
	if iso[0] != n/3 || iso[1] != n/3 || iso[2] != n-2*(n/3) {
		t.Fatalf("iso %v", iso)
	}
}

// TestSplitIsoMinChunk: iso chunks under MinChunk merge.
func TestSplitIsoMinChunk(t *testing.T) {
	models := []*RailModel{nil, nil, nil}
	tests := []struct {
		n, min int
		busy   []float64
		want   []int
	}{
		{96 << 10, 0, nil, []int{32 << 10, 32 << 10, 32 << 10}},
		{95 << 10, 0, nil, []int{95 << 9, 95 << 9, 0}},
		{40 << 10, 0, nil, []int{40 << 10, 0, 0}},
		{10, 1, nil, []int{3, 3, 4}},
		{10, 1, []float64{5, 0, 0}, []int{0, 5, 5}},
	}
	for _, tc := range tests {
		got, _ := PlanSplit(SplitIso, models, tc.busy, tc.n, tc.min)
		if !slices.Equal(got, tc.want) {
			t.Errorf("iso %d min %d busy %v: %v, want %v", tc.n, tc.min, tc.busy, got, tc.want)
		}
	}
}

// bulkPacket returns a Bulk packet of n bytes (region r) queued alone.
func bulkPacket(n int, r uint64) (*Queue, *Packet) {
	p := &Packet{Kind: Bulk, Body: make([]byte, n), Region: r, Owner: nopOwner{}}
	q := &Queue{}
	q.Push(p)
	return q, p
}

func states(models []*RailModel, busy []float64) []RailState {
	rs := make([]RailState, len(models))
	for i, m := range models {
		rs[i].Model = m
		if i < len(busy) && busy[i] > 0 {
			rs[i].Busy, rs[i].BusyFor = true, busy[i]
		}
	}
	return rs
}

// TestSplitBusyRails: a busy rail takes part from its predicted release:
// not at all if the idle rail is done before; in part, its share waiting in
// the packet, if it is soon free; entirely, with nothing planned now, if a
// split would not pay.
func TestSplitBusyRails(t *testing.T) {
	tests := []struct {
		name   string
		models []*RailModel
		busy   []float64
		n      int
		// want: which rails get a chunk in PlanSplit, and whether the
		// strategy plans now the idle one's and leaves the rest.
		want    []bool
		planNow bool
	}{
		{"fast rail busy longer than the slow one needs: all on the slow one",
			[]*RailModel{linearModel(t, lat, 100), linearModel(t, lat, 50)}, []float64{200e6, 0}, mib,
			[]bool{false, true}, true},
		{"fast rail busy a little: both, the idle share now",
			[]*RailModel{linearModel(t, lat, 100), linearModel(t, lat, 50)}, []float64{2e6, 0}, 12 * mib,
			[]bool{true, true}, true},
		{"fast rail soon free: wait for it",
			[]*RailModel{linearModel(t, lat, 1000), linearModel(t, lat, 10)}, []float64{20e3, 0}, mib,
			[]bool{true, false}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, rule := range []SplitRule{SplitCurves, SplitWeighted} {
				chunks, _ := PlanSplit(rule, tc.models, tc.busy, tc.n, 0)
				checkPlan(t, chunks, tc.n)
				for i, w := range tc.want {
					if (chunks[i] > 0) != w {
						t.Fatalf("%v: chunks %v", rule, chunks)
					}
				}
				q, p := bulkPacket(tc.n, 1)
				var plan Plan
				Split{Rule: rule}.Schedule(q, states(tc.models, tc.busy), &plan)
				idle := 0
				for i := range chunks {
					if tc.busy[i] == 0 {
						idle += chunks[i]
					}
				}
				if !tc.planNow {
					if len(plan.As) != 0 || q.Len() != 1 || p.Remaining() != tc.n {
						t.Fatalf("%v: planned %v, %d queued, %d remaining", rule, plan.As, q.Len(), p.Remaining())
					}
					continue
				}
				if len(plan.As) != 1 || plan.As[0].Rail != 1 || plan.As[0].Off != 0 || plan.As[0].Len != idle {
					t.Fatalf("%v: plan %+v, want %d bytes on rail 1", rule, plan.As, idle)
				}
				if p.Remaining() != tc.n-idle || (q.Len() == 0) != (idle == tc.n) {
					t.Fatalf("%v: %d remaining, %d queued", rule, p.Remaining(), q.Len())
				}
			}
		})
	}
}

// TestSplitSmallPacketsWhole: under SplitPays, a Bulk packet goes whole to
// the rail that finishes it first; from there, the split saves 5 %.
func TestSplitSmallPacketsWhole(t *testing.T) {
	// The fast rail has a high latency: small packets go to the other.
	models := []*RailModel{linearModel(t, 200e3, 100), linearModel(t, 10e3, 50)}
	pays := SplitPays(models, 0)
	if pays <= defaultMinChunk || pays > 4*mib {
		t.Fatalf("SplitPays %d", pays)
	}
	t.Logf("split pays from %d bytes", pays)
	for _, n := range []int{1, 1000, 8 << 10, 20 << 10, 64 << 10, pays / 2, pays - 1} {
		chunks, finish := PlanSplit(SplitCurves, models, nil, n, 0)
		best := 0
		if models[1].Predict(n) < models[0].Predict(n) {
			best = 1
		}
		if chunks[best] != n || finish != models[best].Predict(n) {
			t.Fatalf("%d bytes: chunks %v finish %v, want all on rail %d", n, chunks, finish, best)
		}
		q, p := bulkPacket(n, 1)
		var plan Plan
		Split{}.Schedule(q, states(models, nil), &plan)
		if len(plan.As) != 1 || plan.As[0].Rail != best || plan.As[0].Len != n || q.Len() != 0 || p.Remaining() != 0 {
			t.Fatalf("%d bytes: plan %+v", n, plan.As)
		}
	}
	for _, n := range []int{pays, 2 * pays, 100 * mib} {
		chunks, finish := PlanSplit(SplitCurves, models, nil, n, 0)
		single := min(models[0].Predict(n), models[1].Predict(n))
		if chunks[0] == 0 || chunks[1] == 0 || finish > 0.95*single {
			t.Fatalf("%d bytes: chunks %v finish %v, single %v", n, chunks, finish, single)
		}
	}
	if p := SplitPays(models[:1], 0); p != 0 {
		t.Fatalf("SplitPays of one rail %d", p)
	}
	if p := SplitPays([]*RailModel{linearModel(t, lat, 100), linearModel(t, 100e6, 0.001)}, 0); p != 0 {
		t.Fatalf("SplitPays with a useless rail %d", p)
	}
}

// TestSplitWithoutModels: with no model, curves and weighted send whole on
// the first idle rail, as Default does; iso needs none.
func TestSplitWithoutModels(t *testing.T) {
	for _, s := range []Split{{}, {Rule: SplitWeighted}} {
		q, p := bulkPacket(4*mib, 1)
		var plan Plan
		s.Schedule(q, []RailState{{Busy: true}, {}, {}}, &plan)
		if len(plan.As) != 1 || plan.As[0].Rail != 1 || plan.As[0].Len != p.Len() || q.Len() != 0 {
			t.Fatalf("%s: plan %+v", s.Name(), plan.As)
		}
	}
	q, _ := bulkPacket(4*mib, 1)
	var plan Plan
	Split{Rule: SplitIso}.Schedule(q, []RailState{{Busy: true}, {}, {}}, &plan)
	if len(plan.As) != 2 || plan.As[0].Rail != 1 || plan.As[1].Rail != 2 || plan.As[0].Len != 2*mib || plan.As[1].Off != 2*mib {
		t.Fatalf("iso plan %+v", plan.As)
	}
}

func TestSplitNames(t *testing.T) {
	for s, want := range map[Strategy]string{
		Split{}: "split", Split{Rule: SplitWeighted}: "split/weighted", Split{Rule: SplitIso}: "split/iso", Single{Rail: 2}: "single/2",
		Split{Offload: 1}: "split+offload", Split{Rule: SplitWeighted, Offload: 64 << 10}: "split/weighted+offload",
		Split{Rule: SplitIso, Offload: 1}: "split/iso+offload",
	} {
		if s.Name() != want {
			t.Errorf("%#v: name %q, want %q", s, s.Name(), want)
		}
	}
}

// TestSplitEager: Eager packets are aggregated as by Aggregate and go to
// the idle rail that finishes the frame first; a Bulk packet behind them
// is split over the rails left and the busy ones.
func TestSplitEager(t *testing.T) {
	slowStart, quick := linearModel(t, 200e3, 100), linearModel(t, 10e3, 50)
	models := []*RailModel{slowStart, quick}
	o := &owner{}
	tests := []struct {
		name  string
		s     Split
		rails []RailState
		want  string // rail:packets per frame
	}{
		{"one per frame, fastest first", Split{}, states(models, nil), "1:a 0:b"},
		{"aggregated on the fastest", Split{Aggregate: 1 << 10}, states(models, nil), "1:abc"},
		{"aggregation bounded by MaxPacket", Split{Aggregate: 1 << 10}, []RailState{{Model: slowStart}, {Model: quick, Caps: driver.Caps{MaxPacket: 4}}}, "1:ab 0:c"},
		{"no model: first idle", Split{}, []RailState{{Busy: true}, {}, {}}, "1:a 2:b"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q := &Queue{}
			for _, h := range []string{"a", "b", "c"} {
				q.Push(eager(o, h, "1"))
			}
			var plan Plan
			tc.s.Schedule(q, tc.rails, &plan)
			got := ""
			for _, a := range plan.As {
				if got != "" {
					got += " "
				}
				got += fmt.Sprintf("%d:", a.Rail)
				for _, p := range a.Packets {
					got += string(p.Head)
				}
			}
			if got != tc.want {
				t.Fatalf("plan %q, want %q", got, tc.want)
			}
		})
	}
	// Eager then Bulk: the quick rail takes the frame, the Bulk packet is
	// split with it counted busy for the frame's time.
	q := &Queue{}
	q.Push(eager(o, "a", "1"))
	p := &Packet{Kind: Bulk, Body: make([]byte, 12*mib), Region: 1, Owner: o}
	q.Push(p)
	var plan Plan
	Split{}.Schedule(q, states(models, nil), &plan)
	if len(plan.As) != 2 || plan.As[0].Rail != 1 || plan.As[1].Rail != 0 || plan.As[1].Len == 0 || p.Remaining() == 0 || q.Len() != 1 {
		t.Fatalf("plan %+v, %d remaining", plan.As, p.Remaining())
	}
}

// TestSplitOffload: when one Schedule call plans two Bulk chunks or more,
// those of at least Offload bytes but the last are marked for a
// background writer; a lone chunk, Eager frames, and chunks under the
// threshold are not, nor anything with Offload 0.
func TestSplitOffload(t *testing.T) {
	three := []*RailModel{linearModel(t, lat, 100), linearModel(t, lat, 50), linearModel(t, lat, 25)}
	noModels := []RailState{{}, {}, {}}
	tests := []struct {
		name  string
		s     Split
		rails []RailState
		queue string // E: an Eager packet, else a Bulk packet of that many KiB
		want  string // rail:KiB per frame, "+" when offloaded, "e" for Eager
	}{
		{"two rails, chunks above", Split{Rule: SplitIso, Offload: 1 << 20}, noModels[:2], "4096", "0:2048+ 1:2048"},
		{"two rails, chunks at the threshold", Split{Rule: SplitIso, Offload: 2 << 20}, noModels[:2], "4096", "0:2048+ 1:2048"},
		{"two rails, chunks below", Split{Rule: SplitIso, Offload: 2<<20 + 1}, noModels[:2], "4096", "0:2048 1:2048"},
		{"two rails, offload 0", Split{Rule: SplitIso}, noModels[:2], "4096", "0:2048 1:2048"},
		{"three rails, above", Split{Rule: SplitIso, Offload: 1 << 20}, noModels, "3072", "0:1024+ 1:1024+ 2:1024"},
		{"three rails, below", Split{Rule: SplitIso, Offload: 2 << 20}, noModels, "3072", "0:1024 1:1024 2:1024"},
		{"three rails, offload 0", Split{Rule: SplitIso}, noModels, "3072", "0:1024 1:1024 2:1024"},
		// 100, 50 and 25 MB/s: 4:2:1 of 12 MiB.
		{"three curves, the large chunks", Split{Offload: 2 << 20}, states(three, nil), "12288", "0:7021+ 1:3510+ 2:1755"},
		{"three curves, only the largest", Split{Offload: 4 << 20}, states(three, nil), "12288", "0:7021+ 1:3510 2:1755"},
		{"one chunk: inline", Split{Rule: SplitIso, Offload: 1}, noModels[:2], "40", "0:40"},
		{"one idle rail: inline", Split{Rule: SplitIso, Offload: 1}, []RailState{{Busy: true}, {}}, "4096", "1:4096"},
		{"two packets whole in one call", Split{Rule: SplitIso, Offload: 1}, noModels[:2], "40 50", "0:40+ 1:50"},
		{"eager frames never", Split{Rule: SplitIso, Offload: 1}, noModels, "E 4096", "0:e 1:2048+ 2:2048"},
		{"eager after the chunks", Split{Rule: SplitIso, Offload: 1}, noModels, "40 50 E", "0:40+ 1:50 2:e"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q := &Queue{}
			for _, f := range strings.Fields(tc.queue) {
				if f == "E" {
					q.Push(eager(&owner{}, "e", ""))
					continue
				}
				kib, err := strconv.Atoi(f)
				if err != nil {
					t.Fatal(err)
				}
				q.Push(&Packet{Kind: Bulk, Body: make([]byte, kib<<10), Region: 1, Owner: nopOwner{}})
			}
			var plan Plan
			tc.s.Schedule(q, tc.rails, &plan)
			var got []string
			for _, a := range plan.As {
				g := fmt.Sprintf("%d:e", a.Rail)
				if a.Packets[0].Kind == Bulk {
					g = fmt.Sprintf("%d:%d", a.Rail, a.Len>>10)
				}
				if a.Offload {
					g += "+"
				}
				got = append(got, g)
			}
			if s := strings.Join(got, " "); s != tc.want {
				t.Fatalf("plan %q, want %q", s, tc.want)
			}
		})
	}
}

// TestSplitOffloadFrames: the scheduler posts a marked chunk with
// Frame.Offload and clears it for the rail's next frame.
func TestSplitOffloadFrames(t *testing.T) {
	fakeClock(t)
	s := New(2, Split{Rule: SplitIso, Offload: 1 << 20})
	rails := []*putRail{{peer: 1}, {peer: 1, idx: 1}}
	for _, r := range rails {
		s.AddRail(r)
	}
	o := &countOwner{n: map[*Packet]int{}, errs: map[*Packet]error{}}
	for _, n := range []int{4 * mib, mib} { // chunks of 2 MiB, then of 512 KiB
		s.Submit(1, &Packet{Kind: Bulk, Body: make([]byte, n), Region: 1, Owner: o})
		for _, r := range rails {
			r.finish(s, nil)
		}
	}
	for i, want := range [][]bool{{true, false}, {false, false}} {
		for _, r := range rails {
			if got := r.puts[i].offload; got != want[r.idx] {
				t.Errorf("packet %d, rail %d: Offload %v, want %v", i, r.idx, got, want[r.idx])
			}
		}
	}
}

// TestSingle: everything on one rail, one packet per frame, waiting while
// it is busy; rail 0 when the index does not exist.
func TestSingle(t *testing.T) {
	for _, tc := range []struct {
		s    Single
		want int
	}{{Single{Rail: 1}, 1}, {Single{Rail: 5}, 0}, {Single{Rail: -1}, 0}} {
		sc := New(2, tc.s)
		r := []*rail{{peer: 1, async: true}, {peer: 1, idx: 1, async: true}}
		sc.AddRail(r[0])
		sc.AddRail(r[1])
		o := &owner{}
		sc.Submit(1, eager(o, "a", ""))
		sc.Submit(1, eager(o, "b", ""))
		sc.Submit(1, &Packet{Kind: Bulk, Body: []byte("data"), Region: 1, Owner: o})
		for i := 0; i < 3; i++ {
			if len(r[tc.want].frames) != i+1 || len(r[1-tc.want].frames) != 0 {
				t.Fatalf("%s: frames %v %v", tc.s.Name(), r[0].frames, r[1].frames)
			}
			r[tc.want].pending = false
			sc.Idle(r[tc.want], nil)
		}
		if got := r[tc.want].frames; !slices.Equal(got, []string{"P:a", "P:b", "U:1@0:4"}) {
			t.Fatalf("%s: frames %v", tc.s.Name(), got)
		}
		if len(o.sent) != 3 || pending(sc, 1) != 0 {
			t.Fatalf("%s: %d sent, %d pending", tc.s.Name(), len(o.sent), pending(sc, 1))
		}
	}
}

// fakeClock replaces the scheduler's clock for the test.
func fakeClock(t *testing.T) *int64 {
	var c int64
	old := now
	now = func() int64 { return c }
	t.Cleanup(func() { now = old })
	return &c
}

// putRail is an asynchronous fake rail recording Put frames.
type putRail struct {
	peer, idx int
	mu        sync.Mutex
	busy      bool
	puts      []put
}

type put struct {
	at      int64 // now() at the post
	region  uint64
	off     int64
	n       int
	iov     [][]byte // the parts, by reference
	offload bool     // the frame asked for a background writer
}

func (r *putRail) Caps() driver.Caps { return driver.Caps{Transport: "fake", Rail: r.idx} }
func (r *putRail) Peer() int         { return r.peer }
func (r *putRail) Post(f *driver.Frame) (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.busy {
		panic("posted while busy")
	}
	r.busy = true
	if f.Kind == driver.Put {
		r.puts = append(r.puts, put{now(), f.Region, f.Offset, f.Len(), slices.Clone(f.Iov), f.Offload})
	}
	return false, nil
}

func (r *putRail) isBusy() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.busy
}

func (r *putRail) finish(s *Scheduler, err error) {
	r.mu.Lock()
	r.busy = false
	r.mu.Unlock()
	s.Idle(r, err)
}

type countOwner struct {
	mu   sync.Mutex
	n    map[*Packet]int
	errs map[*Packet]error
}

func (o *countOwner) Sent(p *Packet, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.n[p]++
	o.errs[p] = err
}

// modeledRails adds rails with the given models to peer 1 of s.
func modeledRails(t *testing.T, s *Scheduler, models ...*RailModel) []*putRail {
	rs := make([]*putRail, len(models))
	for i, m := range models {
		rs[i] = &putRail{peer: 1, idx: i}
		s.AddRail(rs[i])
		if err := s.SetModel(1, i, m); err != nil {
			t.Fatal(err)
		}
	}
	return rs
}

// TestSplitScheduler: Bulk packets split by the scheduler over three
// asynchronous rails, finished in various orders (the clock moving to the
// finished frame's predicted end, if later): every byte is sent exactly
// once at its offset, each packet completes once, and an error on one
// chunk reaches its packet's owner once. The curves and weighted rules
// leave busy rails' shares in the packet and plan them when those rails
// are idle again.
func TestSplitScheduler(t *testing.T) {
	orders := [][]int{{0, 1, 2}, {2, 1, 0}, {1, 2, 0}, {2, 0, 1}}
	sizes := []int{4 * mib, 2*mib + 3, 300 << 10}
	bodies := make([][]byte, len(sizes))
	for i, n := range sizes {
		bodies[i] = pattern(n)
	}
	for _, rule := range []SplitRule{SplitCurves, SplitWeighted, SplitIso} {
		deferrals := 0
		for oi, order := range orders {
			for _, failRail := range []int{-1, 1} {
				name := fmt.Sprintf("%s/order %d/fail %d", Split{Rule: rule}.Name(), oi, failRail)
				t.Run(name, func(t *testing.T) {
					clock := fakeClock(t)
					s := New(2, Split{Rule: rule})
					rails := modeledRails(t, s, linearModel(t, lat, 100), linearModel(t, lat, 50), linearModel(t, lat, 25))
					o := &countOwner{n: map[*Packet]int{}, errs: map[*Packet]error{}}
					var ps []*Packet
					for i, body := range bodies {
						p := &Packet{Kind: Bulk, Body: body, Region: uint64(i + 1), Offset: 1000, Owner: o}
						ps = append(ps, p)
						s.Submit(1, p)
					}
					boom := errors.New("boom")
					var failed *Packet
					for step := 0; pending(s, 1) > 0; step++ {
						if step > 1000 {
							t.Fatal("no progress")
						}
						for _, i := range order {
							r := rails[(i+step)%3]
							if !r.isBusy() {
								continue
							}
							sl := s.dests[1].slots[r.idx]
							*clock = max(*clock, sl.postedAt+int64(sl.predicted))
							var err error
							if r.idx == failRail && failed == nil {
								err = boom
								last := r.puts[len(r.puts)-1]
								failed = ps[last.region-1]
							}
							r.finish(s, err)
							break
						}
					}
					var all []put
					for _, r := range rails {
						all = append(all, r.puts...)
					}
					deferred := 0 // packets whose chunks were posted at different times
					for _, p := range ps {
						var at []int64
						for _, u := range all {
							if u.region == p.Region && !slices.Contains(at, u.at) {
								at = append(at, u.at)
							}
						}
						if len(at) > 1 {
							deferred++
						}
					}
					t.Logf("%d frames, %d packets deferred in part", len(all), deferred)
					if len(all) <= len(ps) || (rule == SplitIso && deferred > 0) {
						t.Fatalf("%d frames, %d packets deferred in part", len(all), deferred)
					}
					deferrals += deferred
					for _, p := range ps {
						var mine []put
						for _, u := range all {
							if u.region == p.Region {
								mine = append(mine, u)
							}
						}
						sort.Slice(mine, func(i, j int) bool { return mine[i].off < mine[j].off })
						off := p.Offset
						for _, u := range mine {
							if u.off != off {
								t.Fatalf("region %d: chunk at %d, want %d (%d chunks)", p.Region, u.off, off, len(mine))
							}
							rel := int(off - p.Offset)
							if len(u.iov) != 1 || &u.iov[0][0] != &p.Body[rel] || len(u.iov[0]) != u.n {
								t.Fatalf("region %d: the chunk at %d is not the packet's bytes", p.Region, off)
							}
							off += int64(u.n)
						}
						if int(off-p.Offset) != len(p.Body) {
							t.Fatalf("region %d: %d of %d bytes sent", p.Region, off-p.Offset, len(p.Body))
						}
						if o.n[p] != 1 {
							t.Fatalf("region %d: owner told %d times", p.Region, o.n[p])
						}
						want := error(nil)
						if p == failed {
							want = boom
						}
						if o.errs[p] != want {
							t.Fatalf("region %d: error %v, want %v", p.Region, o.errs[p], want)
						}
					}
					if failRail >= 0 && failed == nil {
						t.Fatal("no frame failed")
					}
				})
			}
		}
		if rule != SplitIso && deferrals == 0 {
			t.Errorf("%v: no packet had a busy rail's share planned later", rule)
		}
	}
}

// TestSplitLearnsFromCompletions: a rail whose chunks take 4 times their
// prediction gets a smaller share of the models' split of the next
// packets, down to about a fifth of two equal rails' bytes. The share
// search starts on that loaded rail, but with no receiver answering it
// leaves the share to the models after a few probes.
func TestSplitLearnsFromCompletions(t *testing.T) {
	clock := fakeClock(t)
	s := New(2, Split{})
	models := []*RailModel{linearModel(t, lat, 100), linearModel(t, lat, 100)}
	rails := modeledRails(t, s, models...)
	o := &countOwner{n: map[*Packet]int{}, errs: map[*Packet]error{}}
	const n = 4 * mib
	body := make([]byte, n)
	prev := 0.5
	for round := 0; round < 12; round++ {
		t0 := *clock
		s.Submit(1, &Packet{Kind: Bulk, Body: body, Region: 1, Owner: o})
		c0 := rails[0].puts[len(rails[0].puts)-1].n
		c1 := rails[1].puts[len(rails[1].puts)-1].n
		if c0+c1 != n {
			t.Fatalf("round %d: chunks %d + %d", round, c0, c1)
		}
		chunks, _ := PlanSplit(SplitCurves, models, nil, n, 0)
		share := float64(chunks[1]) / n
		if round > 0 && !(share < prev) {
			t.Fatalf("round %d: the slow rail's share %.3f, before %.3f", round, share, prev)
		}
		prev = share
		if sent := float64(c1) / n; round == 11 && math.Abs(sent-share) > 0.01 {
			t.Fatalf("the slow rail took %.3f of the last packet, the models' share %.3f", sent, share)
		}
		*clock = t0 + int64(models[0].transfer(c0))
		rails[0].finish(s, nil)
		*clock = t0 + int64(4*models[1].transfer(c1))
		rails[1].finish(s, nil)
	}
	if f := models[1].Factor(); math.Abs(f-4) > 0.2 || !near(models[0].Factor(), 1, 1e-6) {
		t.Fatalf("factors %v %v", models[0].Factor(), f)
	}
	if prev < 0.19 || prev > 0.22 {
		t.Fatalf("the slow rail's share %.3f, want about 1/5", prev)
	}
}

// recorder records the rail states a strategy is given.
type recorder struct {
	inner Strategy
	seen  [][]RailState
}

func (r *recorder) Name() string { return "recorder" }
func (r *recorder) Schedule(q *Queue, rails []RailState, plan *Plan) {
	r.seen = append(r.seen, slices.Clone(rails))
	r.inner.Schedule(q, rails, plan)
}

// TestBusyFor: the scheduler tells strategies how long a busy rail with a
// model stays busy, from the frame's post time and predicted duration, and
// feeds the chunk's duration to the model.
func TestBusyFor(t *testing.T) {
	clock := fakeClock(t)
	rec := &recorder{inner: Single{Rail: 0}}
	s := New(2, rec)
	m0, m1 := linearModel(t, lat, 100), linearModel(t, lat, 50)
	rails := modeledRails(t, s, m0, m1)
	o := &countOwner{n: map[*Packet]int{}, errs: map[*Packet]error{}}
	*clock = 1000
	s.Submit(1, &Packet{Kind: Bulk, Body: make([]byte, mib), Region: 1, Owner: o})
	pred := m0.Predict(mib)
	*clock = 1000 + int64(pred/4)
	s.Submit(1, eager(&owner{}, "x", ""))
	last := rec.seen[len(rec.seen)-1]
	if !last[0].Busy || !near(last[0].BusyFor, pred-float64(int64(pred/4)), 1e-12) || last[1].Busy || last[1].BusyFor != 0 {
		t.Fatalf("states %+v, want rail 0 busy for %v", last, pred*3/4)
	}
	if last[0].Model != m0 || last[1].Model != m1 {
		t.Fatal("models not shown")
	}
	*clock = 1000 + int64(2*pred) // overdue, then done
	s.Submit(1, eager(&owner{}, "y", ""))
	if last = rec.seen[len(rec.seen)-1]; last[0].BusyFor != 0 || !last[0].Busy {
		t.Fatalf("overdue rail: %+v", last[0])
	}
	seen := len(rec.seen)
	rails[0].finish(s, nil)
	// The chunk took 2×pred against the curve's transfer time for it.
	if f, want := m0.Factor(), 1+(float64(int64(2*pred))/m0.transfer(mib)-1)/4; !near(f, want, 1e-6) {
		t.Fatalf("factor %v after a chunk twice as long as predicted, want %v", f, want)
	}
	if f := m1.Factor(); f != 1 {
		t.Fatalf("idle rail's factor %v", f)
	}
	if next := rec.seen[seen]; next[0].Busy || next[0].BusyFor != 0 {
		t.Fatalf("rail 0 after it finished: %+v", next[0])
	}
	// It then took x: busy for x's predicted time.
	if last = rec.seen[len(rec.seen)-1]; !last[0].Busy || last[0].BusyFor != m0.Predict(1) {
		t.Fatalf("rail 0 with x: %+v", last[0])
	}
}

// TestNoClockWithoutModels: the scheduler never reads the clock for a
// destination without models (the single shm or inproc rail).
func TestNoClockWithoutModels(t *testing.T) {
	reads := 0
	old := now
	now = func() int64 { reads++; return 0 }
	defer func() { now = old }()
	s := New(2, nil)
	r := &rail{peer: 1, async: true}
	s.AddRail(r)
	s.Submit(1, &Packet{Kind: Bulk, Body: make([]byte, mib), Region: 1, Owner: &owner{}})
	r.pending = false
	s.Idle(r, nil)
	if reads != 0 {
		t.Fatalf("clock read %d times", reads)
	}
}

func TestSetModel(t *testing.T) {
	s := New(3, nil)
	s.AddRail(&rail{peer: 1})
	m := linearModel(t, lat, 100)
	if err := s.SetModel(1, 0, m); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		peer, rail int
		want       string
	}{
		{1, 1, "sched: SetModel: rank 1 has no rail 1 (1 rails)"},
		{1, -1, "sched: SetModel: rank 1 has no rail -1 (1 rails)"},
		{2, 0, "sched: SetModel: rank 2 has no rail 0 (0 rails)"},
		{3, 0, "sched: SetModel: no rank 3 (job of 3)"},
	} {
		if err := s.SetModel(tc.peer, tc.rail, m); err == nil || err.Error() != tc.want {
			t.Errorf("SetModel(%d, %d): %v, want %q", tc.peer, tc.rail, err, tc.want)
		}
	}
	if err := s.SetModel(1, 0, nil); err != nil {
		t.Fatal(err)
	}
}

// countRail is a synchronous rail that counts its frames.
type countRail struct{ posts *int }

func (countRail) Caps() driver.Caps                  { return driver.Caps{MaxPacket: 1 << 20} }
func (countRail) Peer() int                          { return 1 }
func (r countRail) Post(*driver.Frame) (bool, error) { *r.posts++; return true, nil }

// TestSplitAllocatesNothing: scheduling with Split, Bulk packets split over
// two rails (offloaded or not) and aggregated Eager packets, allocates
// nothing.
func TestSplitAllocatesNothing(t *testing.T) {
	fakeClock(t)
	for _, st := range []Split{{Rule: SplitCurves}, {Rule: SplitWeighted}, {Rule: SplitIso}, {Rule: SplitCurves, Offload: 1}} {
		st.Aggregate = 1 << 10
		s := New(2, st)
		posts := 0
		s.AddRail(countRail{&posts})
		s.AddRail(countRail{&posts})
		for i, m := range []*RailModel{linearModel(t, lat, 100), linearModel(t, lat, 50)} {
			if err := s.SetModel(1, i, m); err != nil {
				t.Fatal(err)
			}
		}
		bulk := &Packet{Kind: Bulk, Body: make([]byte, 4*mib), Region: 1, Owner: nopOwner{}}
		e := &Packet{Kind: Eager, Head: []byte("h"), Owner: nopOwner{}}
		s.Submit(1, bulk)
		if posts != 2 {
			t.Fatalf("%s: %d frames for a split packet", st.Name(), posts)
		}
		s.Submit(1, e)
		allocs := testing.AllocsPerRun(1000, func() {
			s.Submit(1, bulk)
			s.Submit(1, e)
		})
		if allocs > 0 {
			t.Fatalf("%s: Submit allocates %.1f times", st.Name(), allocs)
		}
	}
}

// BenchmarkSplitSchedule: the cost of one decision for a 4 MiB Bulk packet
// over idle rails of 100, 50, 33 and 25 MB/s (the strategy runs on the
// critical path).
func BenchmarkSplitSchedule(b *testing.B) {
	for _, rule := range []SplitRule{SplitCurves, SplitWeighted, SplitIso} {
		for _, k := range []int{2, 4} {
			b.Run(fmt.Sprintf("%v/%d rails", rule, k), func(b *testing.B) {
				var models []*RailModel
				for i := 0; i < k; i++ {
					models = append(models, linearModel(b, lat, 100/float64(i+1)))
				}
				rails := states(models, nil)
				p := &Packet{Kind: Bulk, Body: make([]byte, 4*mib), Owner: nopOwner{}}
				var q Queue
				var plan Plan
				s := Split{Rule: rule}
				b.ReportAllocs()
				for b.Loop() {
					p.planned = 0
					q.Push(p)
					plan.Reset()
					s.Schedule(&q, rails, &plan)
				}
			})
		}
	}
}
