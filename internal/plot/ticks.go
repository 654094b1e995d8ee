package plot

import (
	"math"
	"strconv"

	gplot "gonum.org/v1/plot"

	"github.com/commtune/commtune/internal/units"
)

// maxSizeLabels bounds the labelled ticks of the size axis: at 9 points,
// "256K" takes about a third of an inch, and a 6-inch figure fits a dozen
// with room between them.
const maxSizeLabels = 13

// sizeTicks marks the size axis at powers of two, labelled as commtune
// prints sizes everywhere else (1, 4, 16 ... 1K ... 1M), since the samples
// themselves are powers of two and between. Every power of two in range
// gets a tick; a label goes to every step-th, the step chosen from 1, 2,
// 5, 10 so that 1K and 1M are among them whenever they are in range.
type sizeTicks struct{}

// Ticks implements gonum's plot.Ticker.
func (sizeTicks) Ticks(lo, hi float64) []gplot.Tick {
	if !(lo > 0 && hi >= lo) {
		return nil
	}
	e0 := int(math.Ceil(math.Log2(lo) - 1e-9))
	e1 := int(math.Floor(math.Log2(hi) + 1e-9))
	e0 = max(e0, 0) // no fractions of a byte
	step := 1
	for _, s := range []int{1, 2, 5, 10, 20} {
		step = s
		if labelled(e0, e1, s) <= maxSizeLabels {
			break
		}
	}
	var ticks []gplot.Tick
	for e := e0; e <= e1; e++ {
		t := gplot.Tick{Value: math.Ldexp(1, e)}
		if e%step == 0 {
			t.Label = units.FormatSize(int64(1) << e)
		}
		ticks = append(ticks, t)
	}
	if labelled(e0, e1, step) < 2 {
		// Less than two labelled powers of two in range: label the ends,
		// so the axis still says what it spans.
		ticks = append(ticks,
			gplot.Tick{Value: lo, Label: units.FormatSize(int64(math.Round(lo)))},
			gplot.Tick{Value: hi, Label: units.FormatSize(int64(math.Round(hi)))})
	}
	return ticks
}

// labelled counts the multiples of step in [e0, e1].
func labelled(e0, e1, step int) int {
	n := 0
	for e := e0; e <= e1; e++ {
		if e%step == 0 {
			n++
		}
	}
	return n
}

// timeTicks marks the time axis (µs) by decades, with a tick at each
// multiple of a decade in between. When the range spans too few decades
// for that to label at least two ticks, 2 and 5 of each decade are
// labelled too, then every multiple: the axis of two curves within a
// factor of three of each other must still be readable.
type timeTicks struct{}

// Ticks implements gonum's plot.Ticker.
func (timeTicks) Ticks(lo, hi float64) []gplot.Tick {
	if !(lo > 0 && hi >= lo) {
		return nil
	}
	d0 := int(math.Floor(math.Log10(lo)))
	d1 := int(math.Ceil(math.Log10(hi)))
	for _, labels := range [][]int{{1}, {1, 2, 5}, {1, 2, 3, 4, 5, 6, 7, 8, 9}} {
		ticks, n := decadeTicks(lo, hi, d0, d1, labels)
		if n >= 2 || len(labels) == 9 {
			return ticks
		}
	}
	return nil // not reached
}

// decadeTicks returns the ticks at every multiple 1…9 of each decade from
// 10^d0 to 10^d1 within [lo, hi], labelling the multiples in labels, and
// how many it labelled.
func decadeTicks(lo, hi float64, d0, d1 int, labels []int) ([]gplot.Tick, int) {
	var ticks []gplot.Tick
	n := 0
	for d := d0; d <= d1; d++ {
		for m := 1; m <= 9; m++ {
			v := float64(m) * math.Pow10(d)
			if v < lo*(1-1e-9) || v > hi*(1+1e-9) {
				continue
			}
			t := gplot.Tick{Value: v}
			for _, l := range labels {
				if l == m {
					// Decimals as many as the decade needs: 0.05, 2, 300.
					t.Label = strconv.FormatFloat(v, 'f', max(0, -d), 64)
					n++
				}
			}
			ticks = append(ticks, t)
		}
	}
	return ticks, n
}
