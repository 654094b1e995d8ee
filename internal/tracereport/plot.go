package tracereport

import (
	"bytes"
	"errors"
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"slices"
	"strings"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/commtune/commtune/internal/plot"
	"github.com/commtune/commtune/internal/trace"
)

// Plot draws j, summarized as r, into dir (created if needed) in format
// ("png" or "svg", as internal/plot writes its figures), and returns the
// files written:
//
//   - timeline.FORMAT: a lane per rank, each top-level call a bar
//     coloured by operation over the job's time;
//   - ops-per-rank.FORMAT: each rank's time per operation, stacked;
//   - algorithms.FORMAT: the algorithm each call ran against the call's
//     start, which shows a tuner settling; left out when no call named an
//     algorithm.
func Plot(j *trace.Job, r Report, dir, format string) ([]string, error) {
	if !slices.Contains(plot.Formats, format) {
		return nil, fmt.Errorf("tracereport: image format %q: want %s", format, strings.Join(plot.Formats, " or "))
	}
	if j.SpanCount() == 0 {
		return nil, errNoSpans
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("tracereport: %w", err)
	}
	colors := newOpColors(r)
	figs := []*figure{timelineFigure(j, r, colors), opsFigure(r, colors)}
	if f := algorithmsFigure(j, r, colors); f != nil {
		figs = append(figs, f)
	}
	var paths []string
	for _, f := range figs {
		path := filepath.Join(dir, f.name+"."+format)
		if err := f.write(path, format); err != nil {
			return paths, fmt.Errorf("tracereport: %s: %w", path, err)
		}
		paths = append(paths, path)
	}
	return paths, nil
}

// errNoSpans is returned by Plot for a trace without a call.
var errNoSpans = errors.New("tracereport: the trace holds no calls: nothing to draw")

// pngDPI is the PNGs' resolution, as internal/plot's: tick labels read on
// a screen without zooming. A pixel at it is the smallest width the
// timeline draws.
const pngDPI = 150

// pixel is one PNG pixel; the SVG is drawn as finely.
const pixel = vg.Inch / pngDPI

// figure is one image: a plot, its legend right of it, its size.
type figure struct {
	name   string // file name without extension
	w, h   vg.Length
	plot   *gplot.Plot
	legend gplot.Legend
}

// newFigure returns a figure with a titled plot and an empty legend.
func newFigure(name, title, xLabel, yLabel string, w, h vg.Length) *figure {
	p := gplot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font = font.From(gplot.DefaultFont, 12)
	p.Title.Padding = vg.Points(8)
	p.X.Label.Text, p.Y.Label.Text = xLabel, yLabel
	for _, a := range []*gplot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font = font.From(gplot.DefaultFont, 10)
		a.Tick.Label.Font = font.From(gplot.DefaultFont, 8)
	}
	l := gplot.NewLegend()
	l.TextStyle.Font = font.From(gplot.DefaultFont, 9)
	l.Top, l.Left = true, true
	l.ThumbnailWidth = vg.Points(14)
	l.Padding = vg.Points(2)
	return &figure{name: name, w: w, h: h, plot: p, legend: l}
}

// write draws the figure and writes it to path in format.
func (f *figure) write(path, format string) error {
	var c vg.CanvasWriterTo
	switch format {
	case "png":
		c = vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(f.w, f.h), vgimg.UseDPI(pngDPI))}
	case "svg":
		c = vgsvg.New(f.w, f.h)
	default:
		return fmt.Errorf("unsupported image format %q", format)
	}
	dc := draw.New(c)
	dc.SetColor(color.White)
	dc.Fill(dc.Rectangle.Path())
	margin := vg.Points(8)
	dc = draw.Crop(dc, margin/2, -margin, margin/2, -margin/2)
	plotArea := dc
	if lw := f.legend.Rectangle(dc).Size().X; lw > 0 {
		// The legend stands right of the plot, below the title's height,
		// where it covers no data.
		plotArea = draw.Crop(dc, 0, -(lw + margin), 0, 0)
		title := f.plot.Title.TextStyle.Height(f.plot.Title.Text) + f.plot.Title.Padding
		f.legend.Draw(draw.Crop(dc, dc.Size().X-lw, 0, 0, -title))
	}
	f.plot.Draw(plotArea)
	var b bytes.Buffer
	if _, err := c.WriteTo(&b); err != nil {
		return err
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}

// palette gives the largest operations colours that stay apart
// (matplotlib's tab10 and two more); the rest share otherColor.
var palette = []color.RGBA{
	{0x1f, 0x77, 0xb4, 0xff}, // blue
	{0xff, 0x7f, 0x0e, 0xff}, // orange
	{0x2c, 0xa0, 0x2c, 0xff}, // green
	{0xd6, 0x27, 0x28, 0xff}, // red
	{0x94, 0x67, 0xbd, 0xff}, // purple
	{0x8c, 0x56, 0x4b, 0xff}, // brown
	{0xe3, 0x77, 0xc2, 0xff}, // pink
	{0xbc, 0xbd, 0x22, 0xff}, // olive
	{0x17, 0xbe, 0xcf, 0xff}, // cyan
	{0x1a, 0x55, 0x10, 0xff}, // dark green
	{0xff, 0xbb, 0x78, 0xff}, // light orange
	{0x39, 0x3b, 0x79, 0xff}, // navy
}

var (
	otherColor = color.RGBA{0x7f, 0x7f, 0x7f, 0xff}
	lifeColor  = color.RGBA{0xee, 0xee, 0xee, 0xff} // a rank's time from Init to Close
)

// opColors assigns the operations colours, by time: the largest get
// the palette's, the others (if more than it holds) one grey together.
type opColors struct {
	index  map[string]int // operation: colour index
	colors []color.Color
	names  []string // the legend's entry per colour
}

func newOpColors(r Report) *opColors {
	c := &opColors{index: map[string]int{}}
	n := len(r.Ops)
	if n > len(palette) {
		n = len(palette) - 1 // the last colour is the others'
	}
	for i, row := range r.Ops {
		if i < n {
			c.index[row.Op] = i
			c.colors = append(c.colors, palette[i])
			c.names = append(c.names, row.Op)
			continue
		}
		if i == n {
			c.colors = append(c.colors, otherColor)
			c.names = append(c.names, fmt.Sprintf("%d others", len(r.Ops)-n))
		}
		c.index[row.Op] = n
	}
	return c
}

// of returns the colour index of op, which Summarize saw.
func (c *opColors) of(op string) int { return c.index[op] }

// addLegend adds an entry per colour to l.
func (c *opColors) addLegend(l *gplot.Legend) {
	for i, name := range c.names {
		l.Add(name, swatch{c.colors[i]})
	}
}

// swatch is a legend's filled square of a colour.
type swatch struct{ color color.Color }

// Thumbnail implements gonum's plot.Thumbnailer.
func (s swatch) Thumbnail(c *draw.Canvas) {
	r := c.Rectangle
	pad := (r.Max.Y - r.Min.Y) / 6
	c.FillPolygon(s.color, rectangle(r.Min.X, r.Min.Y+pad, r.Max.X, r.Max.Y-pad))
}

// rectangle returns the corners of a rectangle.
func rectangle(x0, y0, x1, y1 vg.Length) []vg.Point {
	return []vg.Point{{X: x0, Y: y0}, {X: x1, Y: y0}, {X: x1, Y: y1}, {X: x0, Y: y1}}
}

// addRect adds a rectangle to path as a closed subpath.
func addRect(path *vg.Path, x0, y0, x1, y1 vg.Length) {
	path.Move(vg.Point{X: x0, Y: y0})
	path.Line(vg.Point{X: x1, Y: y0})
	path.Line(vg.Point{X: x1, Y: y1})
	path.Line(vg.Point{X: x0, Y: y1})
	path.Close()
}

// timeUnit returns the unit that shows a stretch of span ns in numbers
// of a few digits, and its length in ns.
func timeUnit(span int64) (string, float64) {
	switch {
	case span >= 10e9:
		return "s", 1e9
	case span >= 10e6:
		return "ms", 1e6
	case span >= 10e3:
		return "µs", 1e3
	}
	return "ns", 1
}

// labelledTicks marks an axis of rows or columns: the i-th of keys at
// value at(i), labelled label(keys[i]); when there are more than most,
// only every second (fourth...) is labelled, so that labels do not
// overwrite each other.
func labelledTicks(keys []int, at func(int) float64, label func(int) string, most int) gplot.ConstantTicks {
	step := 1
	for len(keys)/step > most {
		step *= 2
	}
	var ticks gplot.ConstantTicks
	for i, k := range keys {
		t := gplot.Tick{Value: at(i)}
		if i%step == 0 {
			t.Label = label(k)
		}
		ticks = append(ticks, t)
	}
	return ticks
}

// clamp bounds x to [lo, hi].
func clamp(x, lo, hi vg.Length) vg.Length { return max(lo, min(x, hi)) }
