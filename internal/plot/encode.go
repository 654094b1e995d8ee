package plot

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"strings"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// encode renders f in format ("png" or "svg").
func (f *figure) encode(format string) ([]byte, error) {
	p, err := f.plot()
	if err != nil {
		return nil, err
	}
	c, err := newCanvas(format)
	if err != nil {
		return nil, err
	}
	f.draw(draw.New(c), p)
	var b bytes.Buffer
	if _, err := c.WriteTo(&b); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// newCanvas returns a figure-sized canvas writing format ("png" or "svg").
func newCanvas(format string) (vg.CanvasWriterTo, error) {
	switch format {
	case "png":
		return vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(width, height), vgimg.UseDPI(pngDPI))}, nil
	case "svg":
		return vgsvg.New(width, height), nil
	}
	return nil, fmt.Errorf("unsupported image format %q", format)
}

// Axis labels, drawn by figure.draw (see figure.plot). They are short:
// an SVG names its fonts (Liberation, metrically Times) without embedding
// them, half a megabyte each, and a viewer lacking them sets the text in
// a wider face, which a long label would push past the figure's edge.
const (
	xLabel = "message size (bytes)"
	yLabel = "one-way time (µs)"
)

// bandNote ends every caption: what the lines and bands are.
const bandNote = "Lines: medians; shaded: 25–75% of the repetitions."

// draw draws p over c: the caption at the bottom, the axis labels beside
// the axes, the plot in what is left.
func (f *figure) draw(c draw.Canvas, p *gplot.Plot) {
	c.SetColor(p.BackgroundColor)
	c.Fill(c.Rectangle.Path())
	margin := vg.Points(8)
	c = draw.Crop(c, margin, -margin, margin/2, -margin/2)
	sty := text.Style{
		Color:   captionColor,
		Font:    font.From(gplot.DefaultFont, 8),
		XAlign:  draw.XLeft,
		YAlign:  draw.YTop,
		Handler: gplot.DefaultTextHandler,
	}
	// Wrapped short of the full width, for a viewer's wider substitute
	// font (see xLabel).
	if lines := wrap(strings.TrimSpace(f.caption+" "+bandNote), sty, 0.9*(c.Max.X-c.Min.X), captionLines); len(lines) > 0 {
		caption := strings.Join(lines, "\n")
		h := sty.Height(caption)
		c.FillText(sty, vg.Point{X: c.Min.X, Y: c.Min.Y + h}, caption)
		c = draw.Crop(c, 0, 0, h+margin, 0)
	}

	label := text.Style{
		Color:   color.Black,
		Font:    font.From(gplot.DefaultFont, 10),
		XAlign:  draw.XCenter,
		YAlign:  draw.YBottom,
		Handler: gplot.DefaultTextHandler,
	}
	gap := vg.Points(4)
	lh := label.Height(xLabel)
	inner := draw.Crop(c, lh+gap, 0, lh+gap, 0)
	data := p.DataCanvas(inner)
	c.FillText(label, vg.Point{X: data.Center().X, Y: c.Min.Y}, xLabel)
	label.Rotation = math.Pi / 2 // reads upwards; its bottom faces the axis
	c.FillText(label, vg.Point{X: c.Min.X + lh, Y: data.Center().Y}, yLabel)
	p.Draw(inner)
}
