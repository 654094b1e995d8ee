package tune

import (
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"
)

var (
	keyA = Key{Op: "allreduce", Ranks: 8, SizeClass: 16, Commutative: true, Transports: "shm"}
	keyB = Key{Op: "bcast", Ranks: 4, SizeClass: 10, Transports: "tcp"}
)

// learned returns a Lottery that has run a few calls of keyA and keyB.
func learned(t *testing.T) *Lottery {
	t.Helper()
	l, err := NewLottery(LotteryConfig{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	cost := map[string]time.Duration{"ring": 3 * time.Millisecond, "tree": time.Millisecond, "flat": 2 * time.Millisecond}
	for _, k := range []Key{keyA, keyB} {
		for range 200 {
			ch := l.Choose(k, []string{"ring", "tree", "flat"})
			for range ch.TTL {
				l.Record(k, ch.Impl, cost[ch.Impl])
			}
		}
	}
	return l
}

func TestStateJSONRoundTrip(t *testing.T) {
	l := learned(t)
	s := l.Snapshot()
	if len(s.Keys) != 2 || len(s.Keys[keyA]) != 3 {
		t.Fatalf("snapshot %+v: want 2 keys with 3 implementations", s)
	}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"allreduce/ranks=8/size=2^16/commutative/shm":{`) || !strings.Contains(string(b), `"avg_s":0.001,`) {
		t.Fatalf("json %s lacks the key or tree's average in seconds", b)
	}
	var back State
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, s) {
		t.Fatalf("round trip changed the state:\n%+v\n%+v", s, back)
	}
	l2, _ := NewLottery(LotteryConfig{})
	if err := l2.Restore(back); err != nil {
		t.Fatal(err)
	}
	if got := l2.Snapshot(); !reflect.DeepEqual(got, s) {
		t.Fatalf("Restore then Snapshot = %+v, want %+v", got, s)
	}
	if ch := l2.Choose(keyA, []string{"ring", "flat", "tree"}); ch.Impl != "tree" {
		t.Fatalf("first Choose after Restore = %+v, want tree", ch)
	}
}

func TestRestoreRejects(t *testing.T) {
	l := learned(t)
	before := l.Snapshot()
	for _, st := range []Stats{
		{Avg: -1, Calls: 1},
		{Avg: math.NaN(), Calls: 1},
		{Avg: math.Inf(1), Calls: 1},
		{Avg: 1, Var: -1, Calls: 1},
		{Avg: 1, Var: math.NaN(), Calls: 1},
		{Avg: 1, Calls: -1},
	} {
		err := l.Restore(State{Keys: map[Key]map[string]Stats{keyA: {"x": st}}})
		if err == nil {
			t.Errorf("Restore(%+v) succeeded", st)
		}
	}
	if got := l.Snapshot(); !reflect.DeepEqual(got, before) {
		t.Fatalf("a failed Restore changed the state")
	}
	// Entries without calls are skipped, not errors.
	if err := l.Restore(State{Keys: map[Key]map[string]Stats{keyA: {"x": {}}}}); err != nil {
		t.Fatal(err)
	}
	if got := l.Snapshot(); len(got.Keys) != 0 {
		t.Fatalf("snapshot %+v, want empty", got)
	}
}

func TestMerge(t *testing.T) {
	st := func(avg, v float64, calls int64) Stats { return Stats{Avg: avg, Var: v, Calls: calls} }
	t.Run("disjoint", func(t *testing.T) {
		a := State{Keys: map[Key]map[string]Stats{keyA: {"ring": st(1, 0.1, 10)}}}
		b := State{Keys: map[Key]map[string]Stats{keyB: {"tree": st(2, 0.2, 20)}, keyA: {"flat": st(3, 0.3, 30)}}}
		want := State{Keys: map[Key]map[string]Stats{
			keyA: {"ring": st(1, 0.1, 10), "flat": st(3, 0.3, 30)},
			keyB: {"tree": st(2, 0.2, 20)},
		}}
		if got := Merge(a, b); !reflect.DeepEqual(got, want) {
			t.Fatalf("Merge = %+v, want %+v", got, want)
		}
	})
	t.Run("overlapping", func(t *testing.T) {
		a := State{Keys: map[Key]map[string]Stats{keyA: {"ring": st(1, 0.5, 10), "tree": st(4, 0, 1)}}}
		b := State{Keys: map[Key]map[string]Stats{keyA: {"ring": st(2, 1, 30)}}}
		got := Merge(a, b)
		// ring: mean (10·1 + 30·2)/40 = 1.75; variance
		// (10·(0.5 + 0.75²) + 30·(1 + 0.25²)) / 40 = 1.0625.
		ring := got.Keys[keyA]["ring"]
		if ring.Calls != 40 || math.Abs(ring.Avg-1.75) > 1e-12 || math.Abs(ring.Var-1.0625) > 1e-12 {
			t.Fatalf("merged ring = %+v, want {1.75 1.0625 40}", ring)
		}
		if got.Keys[keyA]["tree"] != st(4, 0, 1) {
			t.Fatalf("tree, known to one side only, = %+v", got.Keys[keyA]["tree"])
		}
		if back := Merge(b, a); !reflect.DeepEqual(back, got) {
			t.Fatalf("Merge is not symmetric: %+v vs %+v", back, got)
		}
		if a.Keys[keyA]["ring"] != st(1, 0.5, 10) || b.Keys[keyA]["ring"] != st(2, 1, 30) {
			t.Fatalf("Merge changed its arguments")
		}
	})
	t.Run("learned", func(t *testing.T) {
		s := learned(t).Snapshot()
		got := Merge(s, s)
		for k, m := range s.Keys {
			for name, x := range m {
				y := got.Keys[k][name]
				if y.Calls != 2*x.Calls || math.Abs(y.Avg-x.Avg) > 1e-15 || math.Abs(y.Var-x.Var) > 1e-15 {
					t.Fatalf("%s %s: merged with itself %+v, want %+v with twice the calls", k, name, y, x)
				}
			}
		}
		if got := Merge(State{}, State{}); len(got.Keys) != 0 {
			t.Fatalf("Merge of empty states = %+v", got)
		}
	})
}

func TestStatsAdd(t *testing.T) {
	// The first 1/w samples form a plain mean and population variance.
	var s Stats
	for _, x := range []float64{1, 2, 3, 4} {
		s.add(x, 0.25)
	}
	if s.Calls != 4 || math.Abs(s.Avg-2.5) > 1e-12 || math.Abs(s.Var-1.25) > 1e-12 {
		t.Fatalf("after 1..4: %+v, want {2.5 1.25 4}", s)
	}
	// Then each sample weighs w.
	s.add(6.5, 0.25)
	if math.Abs(s.Avg-3.5) > 1e-12 {
		t.Fatalf("after 6.5: %+v, want average 3.5", s)
	}
}
