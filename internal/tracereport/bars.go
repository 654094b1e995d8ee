package tracereport

import (
	"fmt"
	"image/color"
	"strconv"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// opsFigure draws each rank's time per operation as stacked bars, the
// largest operation at the bottom: uneven bars are ranks that waited or
// worked more than the others.
func opsFigure(r Report, colors *opColors) *figure {
	m := r.PerRank
	var most int64
	for i := range m.Ranks {
		var sum int64
		for o := range m.Ops {
			sum += m.Total[o][i]
		}
		most = max(most, sum)
	}
	unit, scale := timeUnit(most)
	f := newFigure("ops-per-rank",
		fmt.Sprintf("Job %s: time in each operation per rank (top-level calls)", r.Job),
		"rank", fmt.Sprintf("time in calls (%s)", unit), 8*vg.Inch, 5*vg.Inch)
	s := &stack{ranks: len(m.Ranks), colors: colors.colors}
	s.totals = make([][]float64, len(colors.colors))
	for i := range s.totals {
		s.totals[i] = make([]float64, len(m.Ranks))
	}
	for o, op := range m.Ops {
		ci := colors.of(op)
		for i, t := range m.Total[o] {
			s.totals[ci][i] += float64(t) / scale
		}
	}
	for i := range m.Ranks {
		var sum float64
		for ci := range s.totals {
			sum += s.totals[ci][i]
		}
		s.top = max(s.top, sum)
	}
	if s.top == 0 {
		s.top = 1
	}
	p := f.plot
	p.X.Min, p.X.Max = -0.6, float64(len(m.Ranks))-0.4
	p.Y.Min, p.Y.Max = 0, s.top*1.05
	p.X.Tick.Marker = labelledTicks(m.Ranks, func(i int) float64 { return float64(i) }, strconv.Itoa, 32)
	grid := plotter.NewGrid()
	grid.Vertical.Color = nil
	p.Add(grid, s)
	colors.addLegend(&f.legend)
	return f
}

// stack is a gonum plotter of stacked bars, a bar per rank and a layer
// per colour.
type stack struct {
	ranks  int
	colors []color.Color
	totals [][]float64 // [colour][rank], in the y axis' unit
	top    float64     // the highest bar
}

// DataRange implements gonum's plot.DataRanger.
func (s *stack) DataRange() (xmin, xmax, ymin, ymax float64) {
	return -0.6, float64(s.ranks) - 0.4, 0, s.top
}

// Plot implements gonum's plot.Plotter.
func (s *stack) Plot(c draw.Canvas, p *gplot.Plot) {
	trX, trY := p.Transforms(&c)
	base := make([]float64, s.ranks)
	for ci, layer := range s.totals {
		var path vg.Path
		for i, v := range layer {
			if v <= 0 {
				continue
			}
			addRect(&path, trX(float64(i)-0.4), trY(base[i]), trX(float64(i)+0.4), max(trY(base[i]+v), trY(base[i])+vg.Points(0.5)))
			base[i] += v
		}
		if len(path) > 0 {
			c.SetColor(s.colors[ci])
			c.Fill(path)
		}
	}
}
