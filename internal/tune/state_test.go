package tune

import (
	"encoding/json"
	"fmt"
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

// sameState reports how a and b differ beyond rounding, or "".
func sameState(a, b State) string {
	near := func(x, y float64) bool { return math.Abs(x-y) <= 1e-12*max(1, math.Abs(x), math.Abs(y)) }
	if len(a.Keys) != len(b.Keys) {
		return fmt.Sprintf("%d keys vs %d", len(a.Keys), len(b.Keys))
	}
	for k, m := range a.Keys {
		n, ok := b.Keys[k]
		if !ok || len(m) != len(n) {
			return fmt.Sprintf("key %s: %v vs %v", k, m, n)
		}
		for name, x := range m {
			y, ok := n[name]
			if !ok || x.Calls != y.Calls || !near(x.Avg, y.Avg) || !near(x.Var, y.Var) {
				return fmt.Sprintf("%s %s: %+v vs %+v", k, name, x, y)
			}
		}
	}
	return ""
}

func TestUpdate(t *testing.T) {
	st := func(avg, v float64, calls int64) Stats { return Stats{Avg: avg, Var: v, Calls: calls} }
	one := func(k Key, impls map[string]Stats) State { return State{Keys: map[Key]map[string]Stats{k: impls}} }
	ring := func(s Stats) State { return one(keyA, map[string]Stats{"ring": s}) }
	tests := []struct {
		name             string
		file, base, mine State
		want             State
	}{
		{"nothing recorded since the load",
			ring(st(1, 0, 10)), ring(st(1, 0, 10)), ring(st(1, 0, 10)),
			ring(st(1, 0, 10))},
		{"first job on an empty file",
			State{}, State{}, ring(st(2, 0.1, 5)),
			ring(st(2, 0.1, 5))},
		// 5 new calls at mine's average 2 pooled with 10 at 1: mean 4/3,
		// variance (10·(1/3)² + 5·(2/3)²)/15 = 2/9.
		{"calls since the load weigh by their number",
			ring(st(1, 0, 10)), ring(st(1, 0, 10)), ring(st(2, 0, 15)),
			ring(st(4.0/3, 2.0/9, 15))},
		// Another job added 20 calls at 1 since this one loaded 10; this
		// one adds 10 at 3: mean 1.5, variance (30·0.25 + 10·2.25)/40.
		{"other jobs wrote since the load",
			ring(st(1, 0, 30)), ring(st(1, 0, 10)), ring(st(3, 0, 20)),
			ring(st(1.5, 0.75, 40))},
		// Fewer calls than loaded: a re-exploration dropped the old
		// measurements, so all 3 samples are new.
		{"re-explored since the load",
			ring(st(1, 0, 10)), ring(st(1, 0, 10)), ring(st(5, 0, 3)),
			ring(combine(st(1, 0, 10), st(5, 0, 3)))},
		{"re-explored back to as many calls",
			ring(st(1, 0, 10)), ring(st(1, 0, 10)), ring(st(5, 0, 10)),
			ring(st(3, 4, 20))},
		{"new implementation and new key",
			ring(st(1, 0, 10)), ring(st(1, 0, 10)),
			State{Keys: map[Key]map[string]Stats{
				keyA: {"ring": st(1, 0, 10), "tree": st(0.5, 0, 4)},
				keyB: {"flat": st(2, 0, 1)},
			}},
			State{Keys: map[Key]map[string]Stats{
				keyA: {"ring": st(1, 0, 10), "tree": st(0.5, 0, 4)},
				keyB: {"flat": st(2, 0, 1)},
			}}},
		{"file lost what was loaded: only the job's own calls return",
			State{}, ring(st(1, 0, 10)), ring(st(2, 0, 12)),
			ring(st(2, 0, 2))},
		{"the file's other keys are kept",
			one(keyB, map[string]Stats{"flat": st(7, 1, 70)}), State{}, ring(st(1, 0, 1)),
			State{Keys: map[Key]map[string]Stats{keyA: {"ring": st(1, 0, 1)}, keyB: {"flat": st(7, 1, 70)}}}},
		{"loaded but not in mine: nothing",
			ring(st(1, 0, 10)), ring(st(1, 0, 10)), State{},
			ring(st(1, 0, 10))},
		{"entries without calls are ignored",
			State{}, State{}, ring(st(0, 0, 0)),
			State{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			file := fmt.Sprint(tc.file)
			got := Update(tc.file, tc.base, tc.mine)
			if d := sameState(got, tc.want); d != "" {
				t.Fatalf("Update = %+v, want %+v: %s", got, tc.want, d)
			}
			if fmt.Sprint(tc.file) != file {
				t.Fatalf("Update changed file")
			}
		})
	}
}

// TestUpdateOrder: two jobs that loaded the same base and write back in
// either order leave the same file, holding every call of both.
func TestUpdateOrder(t *testing.T) {
	base := learned(t).Snapshot()
	job := func(seed uint64, cost map[string]time.Duration) State {
		l, _ := NewLottery(LotteryConfig{Seed: seed})
		if err := l.Restore(base); err != nil {
			t.Fatal(err)
		}
		for range 50 {
			ch := l.Choose(keyA, []string{"ring", "tree", "flat"})
			for range ch.TTL {
				l.Record(keyA, ch.Impl, cost[ch.Impl])
			}
		}
		return l.Snapshot()
	}
	a := job(2, map[string]time.Duration{"ring": 3 * time.Millisecond, "tree": 2 * time.Millisecond, "flat": 2 * time.Millisecond})
	b := job(3, map[string]time.Duration{"ring": time.Millisecond, "tree": 4 * time.Millisecond, "flat": 3 * time.Millisecond})
	ab := Update(Update(base, base, a), base, b)
	ba := Update(Update(base, base, b), base, a)
	if d := sameState(ab, ba); d != "" {
		t.Fatalf("the order of the jobs matters: %s", d)
	}
	// Job b's costs change tree's time fourfold: the drift re-explores
	// keyA, so b's tree calls restart below the base's and all count.
	if b.Keys[keyA]["tree"].Calls >= base.Keys[keyA]["tree"].Calls {
		t.Fatalf("job b did not re-explore tree: %+v", b.Keys[keyA]["tree"])
	}
	added := func(mine, was Stats) int64 {
		if mine.Calls > was.Calls {
			return mine.Calls - was.Calls
		}
		if mine == was {
			return 0
		}
		return mine.Calls
	}
	for name, s := range ab.Keys[keyA] {
		was := base.Keys[keyA][name]
		want := was.Calls + added(a.Keys[keyA][name], was) + added(b.Keys[keyA][name], was)
		if s.Calls != want {
			t.Errorf("%s: %d calls, want the base's and both jobs' %d", name, s.Calls, want)
		}
	}
	if !reflect.DeepEqual(ab.Keys[keyB], base.Keys[keyB]) {
		t.Fatalf("keyB, untouched by both jobs, changed: %+v vs %+v", ab.Keys[keyB], base.Keys[keyB])
	}
}
