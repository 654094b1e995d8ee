package observe

import (
	"strings"
	"sync"
	"testing"
	"time"
)

var (
	testOpA = Register("TestA", CatColl)
	testOpB = Register("TestB", CatP2P)
)

func TestRegisterIsIdempotent(t *testing.T) {
	if Register("TestA", CatColl) != testOpA {
		t.Fatal("registering a name twice gave two operations")
	}
	if testOpA.Name() != "TestA" || testOpA.Cat() != CatColl || regionNames[testOpA] != "commtune.TestA" {
		t.Fatalf("op %d: name %q cat %q region %q", testOpA, testOpA.Name(), testOpA.Cat(), regionNames[testOpA])
	}
}

func TestCounters(t *testing.T) {
	tests := []struct {
		name  string
		calls []struct {
			op      Op
			bytes   int64
			d       int64
			alg, by string
		}
		want []OpStats
	}{
		{"none", nil, nil},
		{"paths by calls, ops by time", []struct {
			op      Op
			bytes   int64
			d       int64
			alg, by string
		}{
			{testOpA, 8, 100, "a/ring", "table"},
			{testOpA, 8, 100, "a/tree", "lottery"},
			{testOpA, 8, 100, "a/tree", "lottery"},
			{testOpB, -1, 1000, "", ""},
		}, []OpStats{
			{Op: "TestB", Calls: 1, Bytes: 0, Time: 1000},
			{Op: "TestA", Calls: 3, Bytes: 24, Time: 300, Paths: []PathStats{{"a/tree", "lottery", 2}, {"a/ring", "table", 1}}},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cs := NewCounters(4)
			for _, c := range tc.calls {
				cs.begin(c.op)
				cs.end(c.op, c.bytes, true, c.d, c.alg, c.by)
			}
			got := cs.Ops()
			if len(got) != len(tc.want) {
				t.Fatalf("ops %+v, want %+v", got, tc.want)
			}
			for i := range got {
				g, w := got[i], tc.want[i]
				if g.Op != w.Op || g.Calls != w.Calls || g.Bytes != w.Bytes || g.Time != time.Duration(w.Time) || len(g.Paths) != len(w.Paths) {
					t.Fatalf("op %d: %+v, want %+v", i, g, w)
				}
				for j := range g.Paths {
					if g.Paths[j] != w.Paths[j] {
						t.Fatalf("op %d path %d: %+v, want %+v", i, j, g.Paths[j], w.Paths[j])
					}
				}
			}
		})
	}
}

func TestCountersPeers(t *testing.T) {
	cs := NewCounters(3)
	if cs.Peers() != nil {
		t.Fatal("peers before any message")
	}
	cs.addPeer(2, true, 10)
	cs.addPeer(2, false, 7)
	cs.addPeer(0, false, 1)
	cs.addPeer(3, true, 1)  // out of range: ignored
	cs.addPeer(-1, true, 1) // any source: ignored
	got := cs.Peers()
	want := []PeerStats{{Peer: 0, Receives: 1, ReceivedBytes: 1}, {Peer: 2, Sends: 1, SentBytes: 10, Receives: 1, ReceivedBytes: 7}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("peers %+v, want %+v", got, want)
	}
}

// TestCountersConcurrent adds from many goroutines: no count is lost (and
// the race detector watches the copy-on-write path lists).
func TestCountersConcurrent(t *testing.T) {
	cs := NewCounters(2)
	var wg sync.WaitGroup
	algs := []string{"x/1", "x/2", "x/3"}
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 1000 {
				cs.begin(testOpA)
				cs.end(testOpA, 1, false, 0, algs[(g+i)%len(algs)], "table")
				cs.addPeer(i%2, i%3 == 0, 1)
			}
		}()
	}
	wg.Wait()
	ops := cs.Ops()
	if len(ops) != 1 || ops[0].Calls != 8000 || ops[0].Bytes != 8000 || ops[0].TimedCalls != 0 {
		t.Fatalf("ops %+v", ops)
	}
	var n int64
	for _, p := range ops[0].Paths {
		n += p.Calls
	}
	if n != 8000 || len(ops[0].Paths) != 3 {
		t.Fatalf("paths %+v", ops[0].Paths)
	}
}

func TestLaneSet(t *testing.T) {
	var l laneSet
	a, b, c := l.take(), l.take(), l.take()
	if a != 0 || b != 1 || c != 2 {
		t.Fatalf("lanes %d %d %d, want 0 1 2", a, b, c)
	}
	l.give(b)
	if got := l.take(); got != 1 {
		t.Fatalf("after giving lane 1 back, took %d", got)
	}
	for range 61 {
		l.take()
	}
	if got, again := l.take(), l.take(); got < 64 || again == got {
		t.Fatalf("beyond 64 lanes: %d then %d, want distinct lanes ≥ 64", got, again)
	}
}

func TestLibraryFrame(t *testing.T) {
	for fn, want := range map[string]bool{
		"github.com/commtune/commtune.Allreduce[...]":            true,
		"github.com/commtune/commtune.(*Comm).Send":              true,
		"github.com/commtune/commtune/internal/comm.(*Call).Run": true,
		"github.com/commtune/commtune/examples/jacobi3d.step":    false,
		"main.main":                       false,
		"github.com/commtune/commtunex.F": false,
	} {
		if got := libraryFrame(fn); got != want {
			t.Errorf("libraryFrame(%q) = %v, want %v", fn, got, want)
		}
	}
}

// TestCountersDerived checks what the counters derive rather than count:
// the bytes of calls of the first call's size, the first path's calls, and
// the time scaled from the calls timed.
func TestCountersDerived(t *testing.T) {
	type call struct {
		bytes   int64
		alg, by string
	}
	tests := []struct {
		name      string
		calls     []call
		bytes     int64
		paths     []PathStats
		timeScale bool
	}{
		{"one size", []call{{8, "a", "t"}, {8, "a", "t"}, {8, "a", "t"}}, 24, []PathStats{{"a", "t", 3}}, false},
		{"sizes vary, none counts 0", []call{{8, "a", "t"}, {16, "a", "t"}, {-1, "a", "t"}, {0, "a", "t"}}, 24, []PathStats{{"a", "t", 4}}, false},
		{"a failed call names no path", []call{{8, "", ""}, {8, "a", "t"}, {8, "b", "l"}, {8, "b", "l"}}, 32,
			[]PathStats{{"b", "l", 2}, {"a", "t", 1}}, false},
		{"same algorithm, another chooser", []call{{8, "a", "t"}, {8, "a", "l"}}, 16, []PathStats{{"a", "t", 1}, {"a", "l", 1}}, false},
		{"many alike, then another size and path", append(repeat(call{8, "a", "t"}, 200), call{16, "a", "t"}, call{8, "b", "t"}),
			8*201 + 16, []PathStats{{"a", "t", 201}, {"b", "t", 1}}, false},
		{"equal names in other bytes", append(repeat(call{8, "a/x", "t"}, 50), repeat(call{8, strings.Clone("a/x"), strings.Clone("t")}, 50)...),
			800, []PathStats{{"a/x", "t", 100}}, false},
	}
	for _, tc := range tests {
		for _, way := range []string{"begin/end", "Begin/End"} {
			t.Run(tc.name+"/"+way, func(t *testing.T) {
				cs := NewCounters(2)
				for _, c := range tc.calls {
					if way == "Begin/End" { // counting alone, as a collective does
						cs.End(cs.Begin(testOpA), c.bytes, c.alg, c.by)
						continue
					}
					timed := cs.begin(testOpA)
					cs.end(testOpA, c.bytes, timed, 100, c.alg, c.by)
				}
				ops := cs.Ops()
				if len(ops) != 1 || ops[0].Calls != int64(len(tc.calls)) || ops[0].Bytes != tc.bytes {
					t.Fatalf("ops %+v: want %d calls, %d bytes", ops, len(tc.calls), tc.bytes)
				}
				if len(ops[0].Paths) != len(tc.paths) {
					t.Fatalf("paths %+v, want %+v", ops[0].Paths, tc.paths)
				}
				for i, p := range tc.paths {
					if ops[0].Paths[i] != p {
						t.Fatalf("paths %+v, want %+v", ops[0].Paths, tc.paths)
					}
				}
			})
		}
	}
}

func repeat[T any](v T, n int) []T {
	out := make([]T, n)
	for i := range out {
		out[i] = v
	}
	return out
}

// TestTimeSample: the first call is timed, then about one in timeEvery,
// and calls that take turns (two sizes alternating) are timed alike.
func TestTimeSample(t *testing.T) {
	const n = 160000
	var timed, even int
	for i := int64(1); i <= n; i++ {
		if timeSample(i) {
			timed++
			if i%2 == 0 {
				even++
			}
		}
	}
	if !timeSample(1) {
		t.Fatal("the first call is not timed")
	}
	if want := n / timeEvery; timed < want*9/10 || timed > want*11/10 {
		t.Fatalf("%d calls timed of %d, want about %d", timed, n, want)
	}
	if even < timed*45/100 || even > timed*55/100 {
		t.Fatalf("%d of the %d timed calls are even-numbered: alternating calls would be timed unequally", even, timed)
	}
	cs := NewCounters(1)
	for range n {
		cs.end(testOpB, 0, cs.begin(testOpB), 100, "", "")
	}
	if ops := cs.Ops(); ops[0].Time != time.Duration(100*n) {
		t.Fatalf("time %v scaled from %d calls timed, want %v", ops[0].Time, ops[0].TimedCalls, time.Duration(100*n))
	}
}
