package plot

import (
	"bytes"
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"slices"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Call is one call of a selector's run: its time and the implementation
// that ran it.
type Call struct {
	TimeUS float64
	Impl   string
}

// Convergence describes a convergence figure: a selector's calls in order,
// each a dot coloured by the implementation drawn, with the running mean
// over a window of calls as a line, and each fixed implementation's mean
// as a dashed level for reference.
type Convergence struct {
	Name  string // file name without extension
	Title string
	Calls []Call
	// Fixed maps implementations to their mean time (µs) when run alone.
	Fixed map[string]float64
}

// convergenceWindow is the running mean's window, in calls: wide enough to
// smooth a noisy machine's spikes, narrow enough to show a change within
// a few percent of a 2 000-call run.
const convergenceWindow = 50

// WriteConvergence draws c into dir, in every one of Formats.
func WriteConvergence(dir string, c Convergence) ([]File, error) {
	if len(c.Calls) == 0 {
		return nil, fmt.Errorf("plot: %s: %w", c.Name, errNoData)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("plot: %w", err)
	}
	p, err := c.plot()
	if err != nil {
		return nil, fmt.Errorf("plot: %s: %w", c.Name, err)
	}
	var files []File
	for _, format := range Formats {
		cw, err := newCanvas(format)
		if err != nil {
			return files, fmt.Errorf("plot: %s: %w", c.Name, err)
		}
		p.Draw(draw.New(cw))
		var b bytes.Buffer
		if _, err := cw.WriteTo(&b); err != nil {
			return files, fmt.Errorf("plot: %s: %w", c.Name, err)
		}
		path := filepath.Join(dir, fileName(c.Name)+"."+format)
		if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
			return files, fmt.Errorf("plot: %w", err)
		}
		files = append(files, File{Path: path, Size: int64(b.Len())})
	}
	return files, nil
}

// plot builds the figure. The time axis is logarithmic: on a shared
// machine a few calls take ten times the rest, and a linear axis would
// flatten everything else against the bottom.
func (c Convergence) plot() (*gplot.Plot, error) {
	p := gplot.New()
	p.Title.Text = c.Title
	p.Title.TextStyle.Font = font.From(gplot.DefaultFont, 11)
	p.X.Label.Text = "call"
	p.Y.Label.Text = "time (µs)"
	p.Y.Scale = gplot.LogScale{}
	p.Y.Tick.Marker = timeTicks{}
	p.Legend.Top = true
	p.Legend.TextStyle.Font = font.From(gplot.DefaultFont, 7)
	p.Legend.ThumbnailWidth = vg.Points(12)
	p.Add(plotter.NewGrid())

	// One colour per implementation, in order of first appearance among
	// the fixed ones (sorted) then the drawn ones.
	var impls []string
	for name := range c.Fixed {
		impls = append(impls, name)
	}
	slices.Sort(impls)
	for _, k := range c.Calls {
		if !slices.Contains(impls, k.Impl) {
			impls = append(impls, k.Impl)
		}
	}
	ymin, ymax := c.Calls[0].TimeUS, c.Calls[0].TimeUS
	for i, name := range impls {
		var xys plotter.XYs
		for j, k := range c.Calls {
			if k.Impl == name && positive(k.TimeUS) {
				xys = append(xys, plotter.XY{X: float64(j + 1), Y: k.TimeUS})
				ymin, ymax = min(ymin, k.TimeUS), max(ymax, k.TimeUS)
			}
		}
		col := colorOf(i)
		if len(xys) > 0 {
			dots, err := plotter.NewScatter(xys)
			if err != nil {
				return nil, err
			}
			dots.GlyphStyle = draw.GlyphStyle{Color: col, Radius: vg.Points(1), Shape: draw.CircleGlyph{}}
			p.Add(dots)
			p.Legend.Add(fmt.Sprintf("%s (%d)", name, len(xys)), dots)
		}
		if m, ok := c.Fixed[name]; ok && positive(m) {
			level, err := plotter.NewLine(plotter.XYs{{X: 1, Y: m}, {X: float64(len(c.Calls)), Y: m}})
			if err != nil {
				return nil, err
			}
			level.Color, level.Width, level.Dashes = col, vg.Points(0.8), []vg.Length{vg.Points(4), vg.Points(3)}
			p.Add(level)
			ymin, ymax = min(ymin, m), max(ymax, m)
		}
	}
	if run := runningMean(c.Calls, convergenceWindow); len(run) > 0 {
		line, err := plotter.NewLine(run)
		if err != nil {
			return nil, err
		}
		line.Color, line.Width = color.Black, vg.Points(1.5)
		p.Add(line)
		p.Legend.Add(fmt.Sprintf("mean of %d calls", convergenceWindow), line)
	}
	if !positive(ymin) {
		return nil, errNoData
	}
	p.X.Min, p.X.Max = 0, float64(len(c.Calls)+1)
	p.Y.Min, p.Y.Max = ymin/1.2, ymax*1.5
	return p, nil
}

// runningMean returns, from call w on, the mean of the last w calls' times.
func runningMean(calls []Call, w int) plotter.XYs {
	if len(calls) < w {
		w = len(calls)
	}
	var out plotter.XYs
	sum := 0.0
	for i, k := range calls {
		sum += k.TimeUS
		if i >= w {
			sum -= calls[i-w].TimeUS
		}
		if i >= w-1 {
			out = append(out, plotter.XY{X: float64(i + 1), Y: sum / float64(w)})
		}
	}
	return out
}
