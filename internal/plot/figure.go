package plot

import (
	"errors"
	"image/color"
	"math"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/commtune/commtune/internal/profile"
)

// figure is one image, described independently of the plotting library:
// its curves, the sizes it marks, and the words around them.
type figure struct {
	name    string // file name without extension
	title   string
	caption string // under the plot, shortened to captionLines if long
	series  []series
	marks   []mark
}

// series is one curve of a figure.
type series struct {
	label string
	curve profile.Curve
	color color.Color
	// reference draws the curve thin, with neither band nor points: a
	// yardstick (the plain copy), not one of the methods compared.
	reference bool
}

// mark is a vertical line at a size, labelled at the top (see marker).
type mark struct {
	size   int64
	label  string
	dotted bool // a secondary boundary, drawn lighter
}

// Sizes and styles. A figure is 6×4 inches, as a figure in a paper; PNGs
// are rendered at 150 dpi (900×600 pixels), enough to read the tick
// labels on a screen without zooming.
const (
	width, height = 6 * vg.Inch, 4 * vg.Inch
	pngDPI        = 150
)

var (
	// palette gives each method a colour that stays distinguishable when
	// its band overlaps another's (matplotlib's first colours).
	palette = []color.RGBA{
		{0x1f, 0x77, 0xb4, 0xff}, // blue
		{0xd6, 0x27, 0x28, 0xff}, // red
		{0x2c, 0xa0, 0x2c, 0xff}, // green
		{0xff, 0x7f, 0x0e, 0xff}, // orange
		{0x94, 0x67, 0xbd, 0xff}, // purple
		{0x8c, 0x56, 0x4b, 0xff}, // brown
	}
	referenceColor = color.RGBA{0x99, 0x99, 0x99, 0xff}
	markColor      = color.RGBA{0x33, 0x33, 0x33, 0xff}
	captionColor   = color.RGBA{0x44, 0x44, 0x44, 0xff}
)

// colorOf returns the i-th method's colour.
func colorOf(i int) color.Color { return palette[i%len(palette)] }

// translucent returns c at the opacity of a quartile band: light enough
// that the median lines and another band show through.
func translucent(c color.Color) color.Color {
	n := color.NRGBAModel.Convert(c).(color.NRGBA)
	n.A = 0x40
	return n
}

// errNoData is returned for a figure none of whose curves has a point to
// draw on log axes.
var errNoData = errors.New("no samples to draw")

// plot builds the figure's plot: everything but the caption and the axis
// labels, which figure.draw adds.
func (f *figure) plot() (*gplot.Plot, error) {
	p := gplot.New()
	p.Title.Text = f.title
	p.Title.TextStyle.Font = font.From(gplot.DefaultFont, 12)
	p.Title.Padding = vg.Points(6)
	// The axis labels are drawn by figure.draw, not by gonum: on a log
	// axis gonum reserves room for a centred label as if it stood at the
	// arithmetic mean of the range, near one end, and shrinks the plot to
	// make room that is never used.
	for _, a := range []*gplot.Axis{&p.X, &p.Y} {
		a.Scale = gplot.LogScale{}
		a.Tick.Label.Font = font.From(gplot.DefaultFont, 9)
	}
	p.X.Tick.Marker = sizeTicks{}
	p.Y.Tick.Marker = timeTicks{}
	p.Legend.Top, p.Legend.Left = true, true
	p.Legend.TextStyle.Font = font.From(gplot.DefaultFont, 9)
	p.Legend.XOffs, p.Legend.YOffs = vg.Points(6), -vg.Points(4)
	p.Legend.ThumbnailWidth = vg.Points(16)
	p.Legend.Padding = vg.Points(2)
	p.Add(plotter.NewGrid())

	r := emptyRange()
	for _, s := range f.series {
		xys := points(s.curve)
		if len(xys) == 0 {
			continue
		}
		r.include(xys)
		if err := addSeries(p, s, xys); err != nil {
			return nil, err
		}
	}
	if r.empty() {
		return nil, errNoData
	}
	r.pad()
	p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = r.xmin, r.xmax, r.ymin, r.ymax
	for i, m := range f.marks {
		p.Add(newMarker(m, i))
	}
	return p, nil
}

// addSeries adds one curve: its quartile band, its median line and a dot
// at each sample (the samples are log-spaced, and seeing where they lie
// tells how far apart the interpolation reaches).
func addSeries(p *gplot.Plot, s series, xys []point) error {
	median := make(plotter.XYs, len(xys))
	for i, q := range xys {
		median[i] = plotter.XY{X: q.size, Y: q.median}
	}
	line, err := plotter.NewLine(median)
	if err != nil {
		return err
	}
	line.Color = s.color
	if s.reference {
		line.Width = vg.Points(0.8)
		p.Add(line)
		p.Legend.Add(s.label, line)
		return nil
	}
	line.Width = vg.Points(1.5)
	band := make(plotter.XYs, 0, 2*len(xys))
	for _, q := range xys {
		band = append(band, plotter.XY{X: q.size, Y: q.p25})
	}
	for i := len(xys) - 1; i >= 0; i-- {
		band = append(band, plotter.XY{X: xys[i].size, Y: xys[i].p75})
	}
	poly, err := plotter.NewPolygon(band)
	if err != nil {
		return err
	}
	poly.Color = translucent(s.color)
	poly.LineStyle.Width = 0
	dots, err := plotter.NewScatter(median)
	if err != nil {
		return err
	}
	dots.GlyphStyle = draw.GlyphStyle{Color: s.color, Radius: vg.Points(1.3), Shape: draw.CircleGlyph{}}
	p.Add(poly, line, dots)
	p.Legend.Add(s.label, poly, line)
	return nil
}

// point is one sample in the figure's units: bytes and microseconds.
type point struct {
	size, median, p25, p75 float64
}

// points converts a curve to the figure's units, leaving out any sample
// a log axis cannot show (a profile is validated to have none, but a
// figure is no place to panic over one).
func points(c profile.Curve) []point {
	out := make([]point, 0, len(c))
	for _, s := range c {
		q := point{float64(s.Size), s.Median / 1e3, s.P25 / 1e3, s.P75 / 1e3}
		if !(positive(q.size) && positive(q.median) && positive(q.p25) && positive(q.p75)) {
			continue
		}
		out = append(out, q)
	}
	return out
}

func positive(x float64) bool { return x > 0 && !math.IsInf(x, 1) }

// dataRange is the extent of a figure's data.
type dataRange struct{ xmin, xmax, ymin, ymax float64 }

func emptyRange() dataRange {
	return dataRange{math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)}
}

func (r *dataRange) empty() bool { return r.xmin > r.xmax }

func (r *dataRange) include(xys []point) {
	for _, q := range xys {
		r.xmin, r.xmax = math.Min(r.xmin, q.size), math.Max(r.xmax, q.size)
		r.ymin, r.ymax = math.Min(r.ymin, q.p25), math.Max(r.ymax, q.p75)
	}
}

// pad widens the range by factors, not amounts, since both axes are
// logarithmic: a single size or time still gets an axis (the plotting
// library would widen it by ±1, to zero or below, which a log axis cannot
// show), and the top leaves room for the marks' labels above the curves.
func (r *dataRange) pad() {
	if r.xmin == r.xmax {
		r.xmin, r.xmax = r.xmin/2, r.xmax*2
	}
	r.ymin, r.ymax = r.ymin/1.2, r.ymax*3
}
