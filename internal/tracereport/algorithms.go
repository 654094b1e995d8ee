package tracereport

import (
	"cmp"
	"fmt"
	"image/color"
	"math"
	"slices"
	"strings"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/commtune/commtune/internal/trace"
)

// algorithmBins is how many columns the algorithms figure's time axis is
// cut into: calls of one operation, algorithm and chooser within a column
// are drawn as one mark, about a pixel and a half wide, so that a
// million calls draw as fast as a thousand.
const algorithmBins = 1000

// shapes mark who chose an algorithm, in order of first appearance.
var shapes = []draw.GlyphDrawer{
	draw.CircleGlyph{}, draw.TriangleGlyph{}, draw.SquareGlyph{}, draw.CrossGlyph{},
	draw.PlusGlyph{}, draw.RingGlyph{}, draw.BoxGlyph{}, draw.PyramidGlyph{},
}

// category is a row of the algorithms figure: an operation's algorithm.
type category struct{ op, alg string }

// label names the category: the algorithm alone when its name starts with
// the operation's ("allreduce/ring"), else "Op: alg".
func (c category) label() string {
	if strings.HasPrefix(strings.ToLower(c.alg), strings.ToLower(c.op)+"/") {
		return c.alg
	}
	return c.op + ": " + c.alg
}

// algorithmsFigure draws the algorithm of each call against its start,
// coloured by operation and shaped by who chose it: a tuner that tries
// algorithms and settles on one shows as scattered marks becoming a
// line. It returns nil when no call named an algorithm.
func algorithmsFigure(j *trace.Job, r Report, colors *opColors) *figure {
	if len(r.Algorithms) == 0 {
		return nil
	}
	// Rows grouped by operation, as the report lists them; the busiest
	// operation's at the top.
	var cats []category
	for _, oa := range r.Algorithms {
		var algs []string
		for _, a := range oa.Algs {
			if !slices.Contains(algs, a.Alg) {
				algs = append(algs, a.Alg)
			}
		}
		slices.Sort(algs)
		for _, a := range algs {
			cats = append(cats, category{oa.Op, a})
		}
	}
	row := make(map[category]int, len(cats))
	for i, c := range cats {
		row[c] = len(cats) - 1 - i
	}
	lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
	var bys []string
	for _, spans := range j.Spans {
		for _, s := range spans {
			if s.Alg != "" {
				lo, hi = min(lo, s.Start), max(hi, s.Start)
				if !slices.Contains(bys, s.By) {
					bys = append(bys, s.By)
				}
			}
		}
	}
	slices.SortFunc(bys, func(a, b string) int { return cmp.Compare(a, b) })
	unit, scale := timeUnit(hi - lo)
	width := float64(max(hi-lo, 1)) / algorithmBins

	// One mark per operation, algorithm, chooser and column.
	type key struct {
		cat category
		by  string
		bin int64
	}
	seen := map[key]bool{}
	series := map[[2]string]plotter.XYs{} // by operation and chooser
	for _, spans := range j.Spans {
		for _, s := range spans {
			if s.Alg == "" {
				continue
			}
			k := key{category{s.Name, s.Alg}, s.By, int64(float64(s.Start-lo) / width)}
			if seen[k] {
				continue
			}
			seen[k] = true
			sk := [2]string{s.Name, s.By}
			series[sk] = append(series[sk], plotter.XY{X: float64(s.Start) / scale, Y: float64(row[k.cat])})
		}
	}

	h := clamp(1.6*vg.Inch+vg.Length(len(cats))*0.3*vg.Inch, 3.5*vg.Inch, 12*vg.Inch)
	f := newFigure("algorithms",
		fmt.Sprintf("Job %s: the algorithm each call ran, over time", j.ID),
		fmt.Sprintf("call start, job time (%s)", unit), "", 10*vg.Inch, h)
	p := f.plot
	p.X.Min, p.X.Max = float64(lo)/scale, float64(hi)/scale
	if p.X.Max <= p.X.Min {
		p.X.Min, p.X.Max = p.X.Min-1, p.X.Max+1
	}
	p.Y.Min, p.Y.Max = -0.5, float64(len(cats))-0.5
	labels := make([]int, len(cats))
	for i := range labels {
		labels[i] = i
	}
	p.Y.Tick.Marker = labelledTicks(labels, func(i int) float64 { return float64(row[cats[i]]) },
		func(i int) string { return cats[i].label() }, 60)
	p.Add(plotter.NewGrid())

	keys := make([][2]string, 0, len(series))
	for k := range series {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b [2]string) int { return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1])) })
	for _, k := range keys {
		sc, err := plotter.NewScatter(series[k])
		if err != nil {
			continue // no point to draw
		}
		sc.GlyphStyle = draw.GlyphStyle{Color: colors.colors[colors.of(k[0])], Radius: vg.Points(2.5), Shape: shapes[slices.Index(bys, k[1])%len(shapes)]}
		p.Add(sc)
	}

	// Legend: the operations' colours, then the choosers' shapes.
	drawn := map[int]bool{}
	for _, oa := range r.Algorithms {
		ci := colors.of(oa.Op)
		if !drawn[ci] {
			drawn[ci] = true
			f.legend.Add(colors.names[ci], swatch{colors.colors[ci]})
		}
	}
	for i, by := range bys {
		f.legend.Add("chosen by "+cmpOr(by, "(not said)"), glyphThumb{draw.GlyphStyle{Color: markColor, Radius: vg.Points(2.5), Shape: shapes[i%len(shapes)]}})
	}
	return f
}

// markColor draws the choosers' shapes in the legend, apart from any
// operation's colour.
var markColor = color.RGBA{0x33, 0x33, 0x33, 0xff}

// glyphThumb is a legend's mark of a shape.
type glyphThumb struct{ style draw.GlyphStyle }

// Thumbnail implements gonum's plot.Thumbnailer.
func (g glyphThumb) Thumbnail(c *draw.Canvas) { c.DrawGlyph(g.style, c.Center()) }
