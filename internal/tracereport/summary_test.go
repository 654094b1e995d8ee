package tracereport

import (
	"math"
	"reflect"
	"testing"

	"github.com/commtune/commtune/internal/trace"
)

// sp is a span of op at site on lane, from start to end (ns).
func sp(op, site string, start, end int64, lane int) trace.Span {
	return trace.Span{Name: op, Cat: "coll", Start: start, End: end, Lane: lane, Site: site, Bytes: -1, Peer: trace.None, Root: trace.None}
}

// withAlg returns s run by alg, chosen by by.
func withAlg(s trace.Span, alg, by string) trace.Span {
	s.Alg, s.By = alg, by
	return s
}

// twoRanks is a job of two ranks of 1000 ns each: rank 0 has a Send
// nested in an Allreduce and an Allreduce on a second lane.
func twoRanks() *trace.Job {
	return &trace.Job{ID: "t",
		Ranks: []trace.RankInfo{{Job: "t", Rank: 0, Size: 2, EndNs: 1000}, {Job: "t", Rank: 1, Size: 2, EndNs: 1000, Dropped: 2}},
		Spans: [][]trace.Span{
			{
				withAlg(sp("Allreduce", "a.go:1 f", 0, 100, 0), "allreduce/ring", "table"),
				withAlg(sp("Send", "", 10, 20, 0), "eager", "direct"), // within the Allreduce
				sp("Send", "b.go:2 g", 200, 250, 0),
				withAlg(sp("Allreduce", "a.go:1 f", 300, 400, 1), "allreduce/ring", "table"),
			},
			{
				withAlg(sp("Allreduce", "a.go:1 f", 0, 300, 0), "allreduce/rd", "lottery"),
				sp("Send", "b.go:2 g", 400, 410, 0),
			},
		},
	}
}

func TestReportSummarize(t *testing.T) {
	allreduce := Row{Op: "Allreduce", Cat: "coll", Calls: 3, Total: 500, Share: 0.25, Mean: 166, Slowest: 1, SlowestTotal: 300, Imbalance: 1.2}
	send := Row{Op: "Send", Cat: "coll", Calls: 2, Total: 60, Share: 0.03, Mean: 30, Slowest: 0, SlowestTotal: 50, Imbalance: 50.0 / 30}
	withSite := func(r Row, site string) Row { r.Site = site; return r }
	tests := []struct {
		name     string
		job      *trace.Job
		sites    bool
		ops      []Row
		siteRows []Row
		perRank  [][]int64
		algs     []OpAlgorithms
	}{
		{"two ranks", twoRanks(), false, []Row{allreduce, send}, nil, [][]int64{{200, 300}, {50, 10}},
			[]OpAlgorithms{
				{Op: "Allreduce", Calls: 3, Algs: []AlgCount{{"allreduce/ring", "table", 2}, {"allreduce/rd", "lottery", 1}}},
				{Op: "Send", Calls: 1, Algs: []AlgCount{{"eager", "direct", 1}}},
			}},
		{"two ranks by site", twoRanks(), true, []Row{allreduce, send},
			[]Row{withSite(allreduce, "a.go:1 f"), withSite(send, "b.go:2 g")}, [][]int64{{200, 300}, {50, 10}}, nil},
		{"one rank busy, one idle", &trace.Job{ID: "u",
			Ranks: []trace.RankInfo{{Rank: 0, Size: 2, EndNs: 100}, {Rank: 1, Size: 2, EndNs: 100}},
			Spans: [][]trace.Span{nil, {sp("Barrier", "", 0, 80, 0), sp("Barrier", "", 80, 80, 0)}}}, false,
			[]Row{{Op: "Barrier", Cat: "coll", Calls: 2, Total: 80, Share: 0.4, Mean: 40, Slowest: 1, SlowestTotal: 80, Imbalance: 2}},
			nil, [][]int64{{0, 80}}, nil},
		{"no calls", &trace.Job{ID: "v", Ranks: []trace.RankInfo{{Rank: 3, Size: 4, StartNs: 5, EndNs: 5}}, Spans: [][]trace.Span{nil}}, true,
			[]Row{}, []Row{}, nil, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := Summarize(tc.job, tc.sites)
			checkRows(t, "Ops", r.Ops, tc.ops)
			if tc.sites {
				checkRows(t, "Sites", r.Sites, tc.siteRows)
			} else if r.Sites != nil {
				t.Errorf("Sites without sites: %+v", r.Sites)
			}
			if !reflect.DeepEqual(r.PerRank.Total, tc.perRank) {
				t.Errorf("PerRank = %v, want %v", r.PerRank.Total, tc.perRank)
			}
			if tc.algs != nil && !reflect.DeepEqual(r.Algorithms, tc.algs) {
				t.Errorf("Algorithms = %+v, want %+v", r.Algorithms, tc.algs)
			}
			var wall int64
			for _, info := range tc.job.Ranks {
				wall += info.Wall()
			}
			if r.WallSum != wall || r.Spans != tc.job.SpanCount() {
				t.Errorf("WallSum %d Spans %d, want %d %d", r.WallSum, r.Spans, wall, tc.job.SpanCount())
			}
		})
	}
}

// checkRows compares rows, the floats to within rounding.
func checkRows(t *testing.T, what string, got, want []Row) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d rows, want %d: %+v", what, len(got), len(want), got)
	}
	for i := range got {
		g, w := got[i], want[i]
		if math.Abs(g.Share-w.Share) > 1e-9 || math.Abs(g.Imbalance-w.Imbalance) > 1e-9 {
			t.Errorf("%s[%d]: share %v imbalance %v, want %v %v", what, i, g.Share, g.Imbalance, w.Share, w.Imbalance)
		}
		g.Share, g.Imbalance, w.Share, w.Imbalance = 0, 0, 0, 0
		if g != w {
			t.Errorf("%s[%d] = %+v\nwant %+v", what, i, g, w)
		}
	}
}

func TestReportTopLevel(t *testing.T) {
	tests := []struct {
		name  string
		spans []trace.Span
		want  []int64 // starts of the top-level spans
	}{
		{"disjoint", []trace.Span{sp("a", "", 0, 10, 0), sp("b", "", 10, 20, 0), sp("c", "", 30, 40, 0)}, []int64{0, 10, 30}},
		{"nested twice", []trace.Span{sp("a", "", 0, 100, 0), sp("b", "", 0, 50, 0), sp("c", "", 10, 20, 0), sp("d", "", 60, 100, 0), sp("e", "", 100, 110, 0)}, []int64{0, 100}},
		{"lanes apart", []trace.Span{sp("a", "", 0, 100, 0), sp("b", "", 10, 20, 1), sp("c", "", 15, 18, 1), sp("d", "", 50, 60, 0)}, []int64{0, 10}},
		{"empty spans", []trace.Span{sp("a", "", 5, 9, 0), sp("b", "", 5, 5, 0), sp("c", "", 9, 9, 0), sp("d", "", 9, 9, 0)}, []int64{5, 9, 9}},
	}
	for _, tc := range tests {
		var got []int64
		forEachTop(tc.spans, func(s *trace.Span) { got = append(got, s.Start) })
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: top-level spans start at %v, want %v", tc.name, got, tc.want)
		}
	}
}
