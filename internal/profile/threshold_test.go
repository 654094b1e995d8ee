package profile

import (
	"strings"
	"testing"
)

func TestSwitch(t *testing.T) {
	flat := func(v float64) func(float64) float64 { return func(float64) float64 { return v } }
	// step gives a the relative offsets r(x) against a flat 1000 ns b.
	step := func(r func(x float64) float64) func(float64) float64 {
		return func(x float64) float64 { return 1000 * (1 + r(x)) }
	}
	tests := []struct {
		name      string
		a, b      Curve
		lo, hi    int64
		want      int64
		crossings int
		rule      string // substring
	}{
		{
			// a = 1000 + x, b = 2000 + x/2 cross at exactly 2000 bytes:
			// 1536 (a better by 232 ns) and 2048 (within noise, b by 24)
			// are adjacent, so the crossing is interpolated between them:
			// 1536 + 512 × 232/256 = 2000.
			name: "one crossing", lo: 1, hi: 65536, want: 2000, crossings: 1,
			a:    curve(logSizes(256, 65536), func(x float64) float64 { return 1000 + x }),
			b:    curve(logSizes(256, 65536), func(x float64) float64 { return 2000 + x/2 }),
			rule: "the curves cross at 2.0K",
		},
		{
			name: "a faster everywhere", lo: 1, hi: 65536, want: 65537, crossings: 0,
			a:    curve(logSizes(1, 65536), func(x float64) float64 { return 100 + x }),
			b:    curve(logSizes(1, 65536), func(x float64) float64 { return 200 + 2*x }),
			rule: "a is as fast or faster up to 64K; no crossing",
		},
		{
			name: "b faster everywhere", lo: 1, hi: 65536, want: 1, crossings: 0,
			a:    curve(logSizes(1, 65536), func(x float64) float64 { return 200 + 2*x }),
			b:    curve(logSizes(1, 65536), func(x float64) float64 { return 100 + x }),
			rule: "b is as fast or faster from 1",
		},
		{
			// a is 30% faster below 64, 10% slower on [64, 256), 30%
			// faster again up to 512, 50% slower from 1024: three
			// crossings. Switching at the first leaves 256–512 (two
			// octaves at 43% regret) on the wrong side; switching at the
			// last leaves two octaves at 10%: the last wins, interpolated
			// between 512 (a: 700) and 1024 (a: 1500): 512 + 512 × 300/800.
			name: "three crossings", lo: 1, hi: 16384, want: 704, crossings: 3,
			a: curve(pow2(1, 16384), step(func(x float64) float64 {
				switch {
				case x < 64:
					return -0.3
				case x < 256:
					return 0.1
				case x < 1024:
					return -0.3
				}
				return 0.5
			})),
			b:    curve(pow2(1, 16384), flat(1000)),
			rule: "3 crossings beyond noise",
		},
		{
			// Within noise from 256 to 16K, wiggling ±0.5% around each
			// other at every sample (they cross many times): any switch in
			// that stretch keeps both within noise, and b takes over at its
			// start, between 128 (a faster by 300 ns) and 256 (b by 5),
			// where the curves cross: 128 + 128 × 300/305 = 254.
			name: "tie: earliest admissible switch", lo: 1, hi: 1 << 20, want: 254, crossings: 1, rule: "earliest switch",
			a: curve(pow2(1, 1<<20), step(func(x float64) float64 {
				switch {
				case x < 256:
					return -0.3
				case x > 16384:
					return 0.3
				}
				if int(x)&0x5555555 != 0 { // even powers of two: +0.5%
					return 0.005
				}
				return -0.005
			})),
			b: curve(pow2(1, 1<<20), flat(1000)),
		},
		{
			// a is 6% faster at 1 byte (beyond the 5% noise), within noise
			// of b from 2 to 512 (wiggling ±0.5%: many raw crossings),
			// and 30% slower from 1K. A rule that let half an octave at 6%
			// stand (5%·octave of slack) switched at the first byte, where
			// b is slower beyond noise; here b takes over from 2.
			name: "a method slower beyond noise is not kept", lo: 1, hi: 4096, want: 2, crossings: 1,
			a: curve(pow2(1, 4096), step(func(x float64) float64 {
				switch {
				case x < 2:
					return -0.06
				case x >= 1024:
					return 0.3
				}
				if int(x)&0x5555555 != 0 {
					return 0.005
				}
				return -0.005
			})),
			b:    curve(pow2(1, 4096), flat(1000)),
			rule: "earliest switch",
		},
		{
			// b is 40% slower, but each point's quartiles span ±60% over 9
			// round trips: twice the standard error of the difference,
			// 2 × 0.93 × √(1120² + 1680²) / 3 ≈ 1250 ns, exceeds the 400 ns
			// gap. The samples cannot tell b slower, and b, which scales,
			// takes over from the first size.
			name: "a gap within the points' own spread is noise", lo: 1, hi: 4096, want: 1, crossings: 0,
			a:    spread(curve(pow2(1, 4096), flat(1000)), 0.6, 9),
			b:    spread(curve(pow2(1, 4096), flat(1400)), 0.6, 9),
			rule: "b is as fast or faster from 1; no crossing beyond noise",
		},
		{
			name: "no samples in range", lo: 1, hi: 100, want: 101,
			a:    curve([]int64{1000, 2000}, flat(1)),
			b:    curve([]int64{1000, 2000}, flat(2)),
			rule: "not enough samples",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := Switch("test", tc.a, tc.b, "a", "b", tc.lo, tc.hi)
			if d.Size != tc.want || len(d.Crossings) != tc.crossings || !strings.Contains(d.Rule, tc.rule) {
				t.Fatalf("Switch = size %d, crossings %v, rule %q; want size %d, %d crossings, rule with %q",
					d.Size, d.Crossings, d.Rule, tc.want, tc.crossings, tc.rule)
			}
		})
	}
}

// spread gives every sample of c quartiles rel of its median either side
// and reps round trips.
func spread(c Curve, rel float64, reps int) Curve {
	out := make(Curve, len(c))
	for i, s := range c {
		s.P25, s.P75, s.Reps = s.Median*(1-rel), s.Median*(1+rel), reps
		out[i] = s
	}
	return out
}

func TestBoundary(t *testing.T) {
	tests := []struct {
		x0, x1 int64
		d0, d1 float64
		want   int64
	}{
		{1000, 2000, -100, 100, 1500},      // crossing halfway
		{1000, 2000, -300, 100, 1750},      // 1000 + 1000 × 300/400
		{1000, 4000, 10, 20, 2000},         // no crossing: geometric mean
		{1000, 1001, -1, 1e-9, 1001},       // never below x0 + 1
		{1000, 2000, 0, 100, 1001},         // touching at x0: the next byte
		{1024, 2048, -232, 24, 1024 + 928}, // 1024 + 1024 × 232/256
	}
	for _, tc := range tests {
		if got := boundary(tc.x0, tc.x1, tc.d0, tc.d1); got != tc.want {
			t.Errorf("boundary(%d, %d, %v, %v) = %d, want %d", tc.x0, tc.x1, tc.d0, tc.d1, got, tc.want)
		}
	}
}

func TestEnvelope(t *testing.T) {
	sizes := pow2(16384, 16<<20)
	copyC := curve(sizes, func(x float64) float64 { return x/10 + 1000 })
	cf := curve(sizes, func(x float64) float64 { return x/12 + 3000 })
	slow := curve(sizes, func(x float64) float64 { return x/5 + 1000 })
	// blip beats copy by 4% at one size only: not worth a range of its own.
	blip := curve(sizes, func(x float64) float64 {
		if x == 32768 {
			return (x/10 + 1000) * 0.96
		}
		return x/8 + 1000
	})
	// last: cachefree 30% slower than copy up to 1M, 10% faster from 2M,
	// and 8% slower again at 16M, the last sample. A switch cost 5%·octave
	// against a regret of 8% over the last half octave: cachefree was
	// kept to the end, where the profile predicts it 8% slower.
	last := curve(sizes, func(x float64) float64 {
		switch {
		case x == 16<<20:
			return (x/10 + 1000) * 1.08
		case x < 2<<20:
			return (x/10 + 1000) * 1.3
		}
		return (x/10 + 1000) * 0.9
	})
	tests := []struct {
		name   string
		curves map[string]Curve
		order  []string
		want   []Range
	}{
		{
			// Boundaries at the crossings interpolated between the
			// neighbouring samples (copy − cachefree: −0.3·copy(1M) and
			// 0.1·copy(2M); 0.1·copy(8M) and −0.08·copy(16M)).
			name:   "a method slower beyond noise at the last sample is not kept there",
			curves: map[string]Curve{"copy": copyC, "cachefree": last},
			order:  []string{"copy", "cachefree"},
			want:   []Range{{16384, "copy"}, {1678913, "cachefree"}, {11616178, "copy"}},
		},
		{
			// copy and cachefree cross at 120000 (x/60 = 2000); 131072
			// is within noise, so the boundary moves to the raw crossing
			// between 65536 (copy faster by 907.7 ns) and 131072
			// (cachefree by 184.5), which interpolates exactly, both
			// curves being straight: 120000.
			name:   "two methods cross",
			curves: map[string]Curve{"copy": copyC, "cachefree": cf, "vmsplice": slow},
			order:  []string{"copy", "vmsplice", "cachefree"},
			want:   []Range{{16384, "copy"}, {120000, "cachefree"}},
		},
		{
			name:   "one method",
			curves: map[string]Curve{"copy": copyC},
			order:  []string{"copy", "cma"},
			want:   []Range{{16384, "copy"}},
		},
		{
			name:   "a one-sample blip is absorbed",
			curves: map[string]Curve{"copy": copyC, "blip": blip},
			order:  []string{"copy", "blip"},
			want:   []Range{{16384, "copy"}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, why := Envelope(tc.curves, tc.order, 16384, 16<<20)
			if len(got) != len(tc.want) {
				t.Fatalf("Envelope = %v (%v), want %v", got, why, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("Envelope = %v (%v), want %v", got, why, tc.want)
				}
			}
			if len(why) == 0 {
				t.Fatal("no reason given")
			}
		})
	}
}

func TestMethodAt(t *testing.T) {
	rs := []Range{{100, "copy"}, {1000, "cma"}, {5000, "cachefree"}}
	for size, want := range map[int64]string{1: "copy", 100: "copy", 999: "copy", 1000: "cma", 4999: "cma", 5000: "cachefree", 1 << 30: "cachefree"} {
		if got := MethodAt(rs, size); got != want {
			t.Errorf("MethodAt(%d) = %s, want %s", size, got, want)
		}
	}
}
