package bench

import (
	"bytes"
	"context"
	"math"
	"strings"
	"testing"

	"github.com/commtune/commtune"
	"github.com/commtune/commtune/internal/coll"
)

func TestSettled(t *testing.T) {
	tests := []struct {
		leaders []string
		call    int
		leader  string
	}{
		{nil, 0, ""},
		{[]string{"a"}, 1, "a"},
		{[]string{"", "a", "a"}, 2, "a"},
		{[]string{"a", "b", "a", "a"}, 3, "a"},
		{[]string{"a", "a", "b"}, 3, "b"},
	}
	for _, tc := range tests {
		call, leader := settled(tc.leaders)
		if call != tc.call || leader != tc.leader {
			t.Errorf("settled(%q) = %d, %q; want %d, %q", tc.leaders, call, leader, tc.call, tc.leader)
		}
	}
}

// TestCollLotteryLocal runs the lottery benchmark on goroutine ranks and
// checks the shape of what it reports, and that its table prints.
func TestCollLotteryLocal(t *testing.T) {
	// Enough calls for the lottery to record some windows: a window of
	// microsecond calls lasts about 100 µs, and the first of each
	// candidate is not recorded.
	const n, calls = 4, 410
	cfg := LotteryConfig{Op: coll.OpAllreduce, Sizes: []int{1 << 10}, Calls: calls}
	runs, cands := lotteryLocal(t, n, cfg)
	run := runs[0]
	if !run.Fixed[0].Table || run.Fixed[0].Algo != cands[0].Name() {
		t.Errorf("first fixed result %+v, want the table's %s", run.Fixed[0], cands[0].Name())
	}
	for _, f := range run.Fixed {
		// 410 calls in blocks of 20: 21 blocks, the last of 10, in time
		// order, whose means weigh into the series' mean.
		if len(f.Blocks) != 21 {
			t.Errorf("%s: %d blocks, want 21", f.Algo, len(f.Blocks))
			continue
		}
		sum := 0.0
		for i, b := range f.Blocks {
			if i > 0 && b.At < f.Blocks[i-1].At || !(b.MeanUS > 0) {
				t.Errorf("%s: blocks %+v, want them in time order with positive means", f.Algo, f.Blocks)
			}
			sum += b.MeanUS * float64(min(lotteryBlock, calls-i*lotteryBlock))
		}
		if got := sum / calls; math.Abs(got-f.MeanUS) > 1e-6*f.MeanUS {
			t.Errorf("%s: blocks weigh to a mean of %v, the series' is %v", f.Algo, got, f.MeanUS)
		}
	}
	for i, k := range run.Calls {
		if !(k.TimeUS > 0) || !containsAlgo(cands, k.Algo) {
			t.Errorf("call %d: %+v: want a positive time and a candidate", i+1, k)
		}
	}
	if run.Calls[0].Algo != cands[0].Name() {
		t.Errorf("first call ran %s: a cold lottery runs the table's %s", run.Calls[0].Algo, cands[0].Name())
	}
	if run.Settled < 1 || run.Settled > calls || !containsAlgo(cands, run.Leader) {
		t.Errorf("settled at %d on %q", run.Settled, run.Leader)
	}
	var out bytes.Buffer
	rep := &LotteryReport{Bench: "coll-lottery", Op: "allreduce", Ranks: n, Transport: "inproc", Runs: runs}
	if err := WriteLotteryTable(&out, rep); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"lottery / best fixed", "settled at call", cands[0].Name() + " (table)"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
}

func containsAlgo(algs []coll.Algorithm, name string) bool {
	for _, a := range algs {
		if a.Name() == name {
			return true
		}
	}
	return false
}

// TestCollLotteryFirstLocal: back to back, the lottery's calls come first
// from a cold start (its first runs the table's choice), every call is
// timed, and each candidate has a figure of its own.
func TestCollLotteryFirstLocal(t *testing.T) {
	const n, calls = 4, 40
	cfg := LotteryConfig{Op: coll.OpAllreduce, Sizes: []int{1 << 10}, Calls: calls, Timing: BackToBack}
	runs, cands := lotteryLocal(t, n, cfg)
	run := runs[0]
	if run.Calls[0].Algo != cands[0].Name() {
		t.Errorf("first call ran %s: a cold lottery runs the table's %s", run.Calls[0].Algo, cands[0].Name())
	}
	sum := 0.0
	for i, k := range run.Calls {
		if !(k.TimeUS > 0) || !containsAlgo(cands, k.Algo) || i > 0 && k.At < run.Calls[i-1].At {
			t.Errorf("call %d: %+v: want a positive time, a candidate, in time order", i+1, k)
		}
		sum += k.TimeUS
	}
	if math.Abs(sum/calls-run.MeanUS) > 1e-6*run.MeanUS {
		t.Errorf("mean %v, the calls' %v", run.MeanUS, sum/calls)
	}
	for i, f := range run.Fixed {
		if !(f.MeanUS > 0) || f.Table != (i == 0) || f.Algo != cands[i].Name() {
			t.Errorf("fixed %d: %+v", i, f)
		}
	}
}

// lotteryLocal runs cfg (one size of allreduce) on n goroutine ranks with
// the lottery on, checks it gave one run of cfg.Calls calls and a result
// per candidate, and returns the runs and the candidates.
func lotteryLocal(t *testing.T, n int, cfg LotteryConfig) ([]LotteryRun, []coll.Algorithm) {
	t.Helper()
	var runs []LotteryRun
	err := commtune.Local(n, func(c *commtune.Comm) error {
		r, err := CollLottery(context.Background(), c, cfg)
		if c.Rank() == 0 {
			runs = r
		}
		return err
	}, func(c *commtune.Config) { c.CollSelect = commtune.CollSelectLottery })
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 1 {
		t.Fatalf("%d runs, want 1", len(runs))
	}
	cands := coll.Candidates(cfg.Op, n, cfg.Sizes[0], true)
	if run := runs[0]; len(run.Calls) != cfg.Calls || len(run.Fixed) != len(cands) {
		t.Fatalf("%d calls and %d fixed results, want %d and %d", len(run.Calls), len(run.Fixed), cfg.Calls, len(cands))
	}
	return runs, cands
}
