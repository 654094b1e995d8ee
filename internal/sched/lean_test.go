package sched

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestLeanChunks: a share moves bytes between the searched rail and the
// others, in proportion, keeping every chunk at least minChunk and the sum.
func TestLeanChunks(t *testing.T) {
	const mc = 32 << 10
	for _, c := range []struct {
		name  string
		in    []int
		rail  int
		share float64
		want  []int
		moved bool
	}{
		{"two rails up", []int{400, 600}, 0, 0.5, []int{500, 500}, true},
		{"two rails down", []int{400, 600}, 0, 0.3, []int{300, 700}, true},
		{"same share", []int{400, 600}, 1, 0.6, []int{400, 600}, false},
		{"three rails give in proportion", []int{200, 300, 500}, 0, 0.4, []int{400, 225, 375}, true},
		{"three rails take in proportion", []int{200, 300, 500}, 0, 0.04, []int{40, 360, 600}, true},
		{"no share", []int{400, 600}, 0, 0, []int{400, 600}, false},
		{"rail given nothing", []int{0, 1000}, 0, 0.5, []int{0, 1000}, false},
	} {
		var out [maxRails]int
		copy(out[:], c.in)
		moved := leanChunks(&out, len(c.in), c.rail, c.share, 0)
		if !slices.Equal(out[:len(c.in)], c.want) {
			t.Errorf("%s: chunks %v, want %v", c.name, out[:len(c.in)], c.want)
		}
		if moved != c.moved {
			t.Errorf("%s: moved %v, want %v", c.name, moved, c.moved)
		}
	}
	// The others keep minChunk: a share asking for more takes what they
	// can spare, in proportion to it.
	out := [maxRails]int{100 << 10, 40 << 10, 1 << 20}
	total := out[0] + out[1] + out[2]
	leanChunks(&out, 3, 0, 0.95, mc)
	if out[1] < mc || out[2] < mc || out[0]+out[1]+out[2] != total {
		t.Fatalf("chunks %v: want the others at least %d, the sum %d", out[:3], mc, total)
	}
	out = [maxRails]int{100 << 10, 1 << 20}
	leanChunks(&out, 2, 0, 0.001, mc)
	if out[0] != mc {
		t.Fatalf("rail asked for almost nothing got %d, want minChunk", out[0])
	}
}

// setFactor sets a model's learned correction.
func setFactor(m *RailModel, f float64) { m.factor.Store(math.Float64bits(f)) }

// TestLeanSearchStartStop: the search runs on the rail with the largest
// correction once it reaches leanOn, stays on down to leanOff, and moves
// to another rail that becomes the more loaded one.
func TestLeanSearchStartStop(t *testing.T) {
	a, b := linearModel(t, lat, 100), linearModel(t, lat, 100)
	st := []RailState{{Model: a}, {Model: b}}
	s := leanSearch{rail: -1}
	for _, c := range []struct {
		fa, fb float64
		rail   int
	}{
		{1, 1.4, -1},
		{1, 1.6, 1},
		{1, 1.3, 1}, // hysteresis
		{1, 1.2, -1},
		{2, 1, 0},
		{2, 3, 1},
	} {
		setFactor(a, c.fa)
		setFactor(b, c.fb)
		on := s.update(st)
		if s.rail != c.rail || on != (c.rail >= 0) {
			t.Fatalf("factors %v, %v: searching rail %d (%v), want %d", c.fa, c.fb, s.rail, on, c.rail)
		}
	}
	if s.update([]RailState{{Model: a}, {}}) {
		t.Fatal("searching with one modeled rail")
	}
}

// TestShareSearchFindsFasterShare drives the scheduler over two rails of
// equal curves, the second loaded (its chunks take 4 times the curve), and
// reports each split message's time as a function of the loaded rail's
// share, 1 + 4·(share − 0.35)² per byte: its minimum is away from the
// models' equal-finish share (about 0.2, where messages take 9 % longer).
// Over the last 200 of 400 messages the search costs at most 1 % more than
// the best share, or 4 % with 10 % noise on every report. Once the load
// is gone the search stops and the models' share is back.
func TestShareSearchFindsFasterShare(t *testing.T) {
	const n, best = 4 * mib, 0.35
	cost := func(share float64) float64 { return 1 + 4*(share-best)*(share-best) }
	for _, c := range []struct{ noise, most float64 }{{0, 1.01}, {0.1, 1.04}} {
		clock := fakeClock(t)
		s := New(2, Split{})
		models := []*RailModel{linearModel(t, lat, 100), linearModel(t, lat, 100)}
		rails := modeledRails(t, s, models...)
		o := &countOwner{n: map[*Packet]int{}, errs: map[*Packet]error{}}
		rng := rand.New(rand.NewPCG(1, 2))
		body := make([]byte, n)
		share := 0.0
		send := func(region uint64, loaded bool) {
			t0 := *clock
			s.Submit(1, &Packet{Kind: Bulk, Body: body, Region: region, Owner: o})
			c0 := rails[0].puts[len(rails[0].puts)-1].n
			c1 := rails[1].puts[len(rails[1].puts)-1].n
			share = float64(c1) / n
			f := 1.0
			if loaded {
				f = 4
			}
			*clock = t0 + int64(models[0].transfer(c0))
			rails[0].finish(s, nil)
			*clock = t0 + int64(f*models[1].transfer(c1))
			rails[1].finish(s, nil)
			if s.Reports(1) {
				d := cost(share) * (1 + c.noise*rng.NormFloat64())
				s.Arrived(1, region, d*float64(n))
			}
		}
		region := uint64(1)
		first, paid := share, 0.0
		for ; region <= 400; region++ {
			send(region, true)
			if region == 20 {
				first = share
			}
			if region > 200 {
				paid += cost(share) / 200
			}
		}
		if rail, _ := s.SearchedShare(1); rail != 1 || paid > c.most {
			t.Fatalf("noise %v: searched rail %d; the last 200 messages cost %.3f of the best, want at most %.2f (the models' share %.2f costs %.3f)",
				c.noise, rail, paid, c.most, first, cost(first))
		}
		for ; region <= 440; region++ {
			send(region, false)
		}
		if rail, _ := s.SearchedShare(1); rail >= 0 || s.Reports(1) {
			t.Fatalf("noise %v: still searching rail %d after the load left", c.noise, rail)
		}
		if math.Abs(share-0.5) > 0.02 {
			t.Fatalf("noise %v: share %.3f without load, want the models' 0.5", c.noise, share)
		}
	}
}
