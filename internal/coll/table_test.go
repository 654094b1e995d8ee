package coll

import "testing"

func TestTableDecide(t *testing.T) {
	tab := NewTable()
	ring, rd := must(OpAllreduce, "ring"), must(OpAllreduce, "recursive-doubling")
	raben := must(OpAllreduce, "rabenseifner")
	tab.Add(OpAllreduce, 4, []TablePoint{
		{Bytes: 1 << 10, Ranked: []Algorithm{rd, ring}, MeanUS: []float64{5, 9}},
		{Bytes: 64 << 10, Ranked: []Algorithm{raben, rd}, MeanUS: []float64{50, 60}},
		{Bytes: 1 << 20, Ranked: []Algorithm{ring, raben}, MeanUS: []float64{500, 520}},
	})
	for _, c := range []struct {
		name        string
		op          Operation
		ranks       int
		bytes       int
		commutative bool
		want        string // "" for no decision
	}{
		{"exact point", OpAllreduce, 4, 64 << 10, true, raben.Name()},
		{"below the first point", OpAllreduce, 4, 8, true, rd.Name()},
		{"above the last point", OpAllreduce, 4, 64 << 20, true, ring.Name()},
		{"nearer the upper point on a log scale", OpAllreduce, 4, 400 << 10, true, ring.Name()},
		{"nearer the lower point on a log scale", OpAllreduce, 4, 200 << 10, true, raben.Name()},
		{"halfway takes the smaller", OpAllreduce, 4, 8 << 10, true, rd.Name()},
		{"non-commutative skips what needs commutativity", OpAllreduce, 4, 1 << 20, false, ""},
		{"non-commutative takes a runner-up that can", OpAllreduce, 4, 64 << 10, false, rd.Name()},
		{"other ranks", OpAllreduce, 8, 1 << 20, true, ""},
		{"other operation", OpBcast, 4, 1 << 20, true, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			a, _, ok := tab.Decide(c.op, c.ranks, c.bytes, c.commutative)
			got := ""
			if ok {
				got = a.Name()
			}
			if got != c.want {
				t.Errorf("Decide(%s, %d, %d, %t) = %q, want %q", c.op, c.ranks, c.bytes, c.commutative, got, c.want)
			}
		})
	}
	if r := tab.Ranks(); len(r) != 1 || r[0] != 4 {
		t.Errorf("Ranks() = %v, want [4]", r)
	}
	var none *Table
	if _, _, ok := none.Decide(OpAllreduce, 4, 1, true); ok {
		t.Error("a nil table decided")
	}
}

func TestSampledDropsWholeMessageSegments(t *testing.T) {
	for _, bytes := range []int{1 << 10, 64 << 10, 1 << 20} {
		got := Sampled(OpBcast, bytes)
		if len(got) == 0 {
			t.Fatalf("%d bytes: nothing sampled", bytes)
		}
		seen := map[Algorithm]bool{}
		for _, a := range got {
			if a.Segment >= bytes && a.Segment > 0 {
				t.Errorf("%d bytes: %s has a segment holding the whole message", bytes, a.Name())
			}
			seen[a] = true
		}
		for _, a := range Algorithms(OpBcast) {
			whole := a
			whole.Segment = 0
			if !seen[whole] {
				t.Errorf("%d bytes: the unsegmented form of %s is not sampled", bytes, a.Name())
			}
		}
	}
	if n, all := len(Sampled(OpBcast, 1<<20)), len(Algorithms(OpBcast)); n != all {
		t.Errorf("1 MiB samples %d of %d algorithms: every segment is below it", n, all)
	}
}

func TestTableCandidates(t *testing.T) {
	tab := NewTable()
	ring, rd := must(OpAllreduce, "ring"), must(OpAllreduce, "recursive-doubling")
	raben, rb := must(OpAllreduce, "rabenseifner"), must(OpAllreduce, "reduce-bcast:knomial")
	tab.Add(OpAllreduce, 4, []TablePoint{
		{Bytes: 1 << 20, Ranked: []Algorithm{raben, ring, rd, rb}, MeanUS: []float64{100, 120, 140, 200}},
	})
	names := func(as []Algorithm) string {
		s := ""
		for _, a := range as {
			s += a.Name() + " "
		}
		return s
	}
	for _, c := range []struct {
		name        string
		commutative bool
		within      float64
		most        int
		want        []Algorithm
	}{
		{"within half again", true, 1.5, 8, []Algorithm{raben, ring, rd}},
		{"at most two", true, 1.5, 2, []Algorithm{raben, ring}},
		{"non-commutative measured from its first", false, 1.5, 8, []Algorithm{rd, rb}},
		{"non-commutative, narrower", false, 1.4, 8, []Algorithm{rd}},
	} {
		if got := tab.Candidates(OpAllreduce, 4, 1<<20, c.commutative, c.within, c.most); names(got) != names(c.want) {
			t.Errorf("%s: %s, want %s", c.name, names(got), names(c.want))
		}
	}
	if got := tab.Candidates(OpBcast, 4, 1<<20, true, 1.5, 8); got != nil {
		t.Errorf("no point: %s", names(got))
	}
}
