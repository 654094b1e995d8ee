package tracereport

import (
	"fmt"
	"math"
	"slices"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/commtune/commtune/internal/trace"
)

// timelineFigure draws every rank's top-level calls over the job's time:
// rank 0 at the top, as the trace viewers put it; a rank's lanes (calls
// in flight at once) share its row, one above the other.
func timelineFigure(j *trace.Job, r Report, colors *opColors) *figure {
	lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
	for i, info := range j.Ranks {
		lo, hi = min(lo, info.StartNs), max(hi, info.EndNs)
		for _, s := range j.Spans[i] {
			lo, hi = min(lo, s.Start), max(hi, s.End)
		}
	}
	unit, scale := timeUnit(hi - lo)
	n := len(j.Ranks)
	h := clamp(vg.Inch*1.6+vg.Length(n)*vg.Inch/4, 3.5*vg.Inch, 14*vg.Inch)
	f := newFigure("timeline",
		fmt.Sprintf("Job %s: every rank's calls over time (top-level calls, coloured by operation)", j.ID),
		fmt.Sprintf("job time (%s; 0 is rank 0's Init)", unit), "", 10*vg.Inch, h)
	p := f.plot
	t := &timeline{job: j, colors: colors, scale: scale, lo: float64(lo) / scale, hi: float64(hi) / scale}
	if t.hi <= t.lo {
		t.hi = t.lo + 1
	}
	p.X.Min, p.X.Max = t.lo, t.hi
	p.Y.Min, p.Y.Max = -0.5, float64(n)-0.5
	p.Y.Tick.Marker = labelledTicks(r.Ranks, t.y, func(rank int) string { return fmt.Sprintf("rank %d", rank) }, 40)
	grid := plotter.NewGrid()
	grid.Horizontal.Color = nil // the rows say where the ranks are
	p.Add(grid, t)
	colors.addLegend(&f.legend)
	f.legend.Add("rank alive, not in a call", swatch{lifeColor})
	return f
}

// timeline is gonum plotter of a job's calls. A span narrower than a
// pixel is not drawn alone: the spans of one colour on one lane are
// merged into runs wherever less than a pixel lies between them, each
// run drawn at least a pixel wide, and every colour's runs are filled as
// one path. What is drawn grows with the figure's width, not with the
// number of spans, so a million spans draw in seconds.
type timeline struct {
	job    *trace.Job
	colors *opColors
	scale  float64 // ns per unit of the x axis
	lo, hi float64 // the x axis' range
}

// y returns the centre of the row of the i-th rank of the job.
func (t *timeline) y(i int) float64 { return float64(len(t.job.Ranks) - 1 - i) }

// DataRange implements gonum's plot.DataRanger.
func (t *timeline) DataRange() (xmin, xmax, ymin, ymax float64) {
	return t.lo, t.hi, -0.5, float64(len(t.job.Ranks)) - 0.5
}

// run is a stretch of one colour on one lane, in canvas units.
type run struct{ x0, x1 vg.Length }

// Plot implements gonum's plot.Plotter.
func (t *timeline) Plot(c draw.Canvas, p *gplot.Plot) {
	trX, trY := p.Transforms(&c)
	x := func(ns int64) vg.Length { return trX(float64(ns) / t.scale) }
	paths := make([]vg.Path, len(t.colors.colors))
	var life vg.Path
	for i, info := range t.job.Ranks {
		top, bottom := trY(t.y(i)+0.4), trY(t.y(i)-0.4)
		addRect(&life, x(info.StartNs), bottom, max(x(info.EndNs), x(info.StartNs)+pixel), top)
		spans := t.job.Spans[i]
		lanes := laneRows(spans)
		height := (top - bottom) / vg.Length(len(lanes))
		runs := map[[2]int]*run{} // by lane row and colour
		flush := func(k [2]int, r *run) {
			y0 := bottom + vg.Length(k[0])*height
			addRect(&paths[k[1]], r.x0, y0, max(r.x1, r.x0+pixel), y0+height)
		}
		forEachTop(spans, func(s *trace.Span) {
			k := [2]int{lanes[s.Lane], t.colors.of(s.Name)}
			x0, x1 := x(s.Start), x(s.End)
			if r := runs[k]; r != nil {
				if x0 <= max(r.x1, r.x0+pixel)+pixel {
					r.x1 = max(r.x1, x1)
					return
				}
				flush(k, r)
			}
			runs[k] = &run{x0, x1}
		})
		for k, r := range runs {
			flush(k, r)
		}
	}
	c.SetColor(lifeColor)
	c.Fill(life)
	for i, path := range paths {
		if len(path) > 0 {
			c.SetColor(t.colors.colors[i])
			c.Fill(path)
		}
	}
}

// laneRows numbers the lanes spans use from 0, bottom to top, so that
// the lanes of a rank share its row without gaps.
func laneRows(spans []trace.Span) map[int]int {
	seen := map[int]bool{}
	for _, s := range spans {
		seen[s.Lane] = true
	}
	lanes := make([]int, 0, len(seen))
	for l := range seen {
		lanes = append(lanes, l)
	}
	slices.Sort(lanes)
	rows := make(map[int]int, len(lanes))
	for i, l := range lanes {
		// Lane 0 on top, as in the viewers.
		rows[l] = len(lanes) - 1 - i
	}
	if len(rows) == 0 {
		rows[0] = 0
	}
	return rows
}
