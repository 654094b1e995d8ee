// Package plot draws a tuning profile's decisions as figures, after those
// of the sampling paper (seed 000, figures 4–18): for each threshold, the
// two methods it chooses between, one-way time against message size on
// log–log axes, with the threshold marked where they cross. A figure shows
// what the samples were and why the threshold lies where it does, which a
// table of numbers (`commtune info`) cannot: a crossing within noise, two
// crossings, a curve that is ragged at one size all read at a glance.
package plot

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/commtune/commtune/internal/profile"
)

// File is one image written by Write.
type File struct {
	Path string // where it was written, dir joined with the file name
	Size int64  // its length in bytes
}

// Formats are the image formats of every figure, in the order Write writes
// them: PNG to look at, SVG to scale and to put in documents.
var Formats = []string{"png", "svg"}

// Write draws every figure of p into dir, creating dir if needed, and
// returns the files written, in order: transports by name; for each, one
// figure per decision of its tuning (iovec, rendezvous, aggregation), then
// one of its large-message methods when it has several; each figure in
// every one of Formats. Files are named <transport>-<figure>.<format>.
//
// A transport the profile cannot tune (it lacks samples) is reported in
// the error and the others are drawn all the same: one bad transport does
// not hide what the rest of the profile says.
func Write(dir string, p *profile.Profile) ([]File, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("plot: %w", err)
	}
	var files []File
	var errs []error
	for _, transport := range transportNames(p) {
		figs, err := figures(p, transport)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, f := range figs {
			written, err := writeFigure(dir, f)
			files = append(files, written...)
			if err != nil {
				errs = append(errs, err)
			}
		}
	}
	return files, errors.Join(errs...)
}

// figures describes every figure of one transport.
func figures(p *profile.Profile, transport string) ([]*figure, error) {
	tu, err := p.Tune(transport, nil)
	if err != nil {
		return nil, fmt.Errorf("plot: %w", err)
	}
	var memcpy profile.Curve
	if p.Host != nil {
		memcpy = p.Host[profile.Memcpy]
	}
	var figs []*figure
	for _, d := range tu.Decisions {
		figs = append(figs, decisionFigure(transport, d, memcpy))
	}
	if f := largeFigure(transport, tu, p.Transports[transport], memcpy); f != nil {
		figs = append(figs, f)
	}
	return figs, nil
}

// writeFigure writes f in every format into dir.
func writeFigure(dir string, f *figure) ([]File, error) {
	var files []File
	for _, format := range Formats {
		data, err := f.encode(format)
		if err != nil {
			return files, fmt.Errorf("plot: %s: %w", f.name, err)
		}
		path := filepath.Join(dir, f.name+"."+format)
		if err := os.WriteFile(path, data, 0o644); err != nil {
			return files, fmt.Errorf("plot: %w", err)
		}
		files = append(files, File{Path: path, Size: int64(len(data))})
	}
	return files, nil
}

// transportNames returns p's transports, sorted.
func transportNames(p *profile.Profile) []string {
	names := make([]string, 0, len(p.Transports))
	for t := range p.Transports {
		names = append(names, t)
	}
	slices.Sort(names)
	return names
}

// fileName makes a file name part of a transport or figure name. Names
// come from the profile, a file from outside: anything but letters,
// digits, '.', '_' and '-' becomes '_', so that no name reaches outside
// the output directory.
func fileName(s string) string {
	b := []byte(s)
	for i, c := range b {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '.', c == '_', c == '-':
		default:
			b[i] = '_'
		}
	}
	if len(b) == 0 {
		return "_"
	}
	return string(b)
}
