package plot

import (
	"image/color"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// marker draws a mark: a vertical line across the whole data area at one
// size, labelled at the top. gonum has no such plotter; a line between
// two data points would need the y range before the plot has settled it,
// and would stretch it.
//
// Labels are horizontal, in the headroom the figure leaves above the
// curves (dataRange.pad), each mark's one row lower than the previous
// mark's, so that the labels of close boundaries do not overwrite each
// other; each sits on a pale background so that a grid line or a curve
// under it does not cross out its words.
type marker struct {
	x     float64
	label string
	row   int
	line  draw.LineStyle
	text  text.Style
}

// labelBackground is the pale backing of a mark's label.
var labelBackground = color.NRGBA{0xff, 0xff, 0xff, 0xd0}

func newMarker(m mark, row int) *marker {
	mk := &marker{
		x:     float64(m.size),
		label: m.label,
		row:   row,
		line:  draw.LineStyle{Color: markColor, Width: vg.Points(1), Dashes: []vg.Length{vg.Points(5), vg.Points(3)}},
		text: text.Style{
			Color:   markColor,
			Font:    font.From(gplot.DefaultFont, 8),
			XAlign:  draw.XLeft,
			YAlign:  draw.YTop,
			Handler: gplot.DefaultTextHandler,
		},
	}
	if m.dotted {
		mk.line.Color = referenceColor
		mk.line.Dashes = []vg.Length{vg.Points(1), vg.Points(2)}
	}
	return mk
}

// Plot implements gonum's plot.Plotter.
func (m *marker) Plot(c draw.Canvas, p *gplot.Plot) {
	if !(m.x > 0) || m.x < p.X.Min || m.x > p.X.Max {
		return
	}
	trX, _ := p.Transforms(&c)
	x := trX(m.x)
	c.StrokeLine2(m.line, x, c.Min.Y, x, c.Max.Y)
	if m.label == "" {
		return
	}
	gap := vg.Points(3)
	sty := m.text
	w, h := sty.Width(m.label), sty.Height(m.label)
	at := vg.Point{X: x + gap, Y: c.Max.Y - gap - vg.Length(m.row)*(h+gap)}
	if at.X+w > c.Max.X { // no room right of the line: write it on the left
		sty.XAlign = draw.XRight
		at.X = x - gap
	}
	box := sty.Rectangle(m.label).Add(at)
	c.FillPolygon(labelBackground, []vg.Point{
		{X: box.Min.X - 1, Y: box.Min.Y}, {X: box.Max.X + 1, Y: box.Min.Y},
		{X: box.Max.X + 1, Y: box.Max.Y}, {X: box.Min.X - 1, Y: box.Max.Y},
	})
	c.FillText(sty, at, m.label)
}
