package plot

import (
	"fmt"
	"slices"
	"strings"

	"github.com/commtune/commtune/internal/profile"
	"github.com/commtune/commtune/internal/units"
)

// largeFigure describes the figure of a transport's large-message methods
// (shared memory's rendezvous by copy, CMA, vmsplice...): every rendezvous
// curve over its sampled sizes, and a line where each range of
// tu.Large begins. It returns nil for a transport with a single
// rendezvous, whose choice the rendezvous figure already shows.
func largeFigure(transport string, tu *profile.Tuning, t *profile.Transport, memcpy profile.Curve) *figure {
	if len(tu.Large) == 0 || t == nil {
		return nil
	}
	f := &figure{
		name:    fileName(transport) + "-large",
		title:   fmt.Sprintf("%s: large-message methods by size", transport),
		caption: strings.Join(tu.LargeWhy, "; ") + ".",
	}
	for i, m := range rendezvousMethods(t) {
		f.series = append(f.series, series{label: m, curve: t.Methods[m], color: colorOf(i)})
	}
	f.series = withReference(f.series, memcpy)
	for i, r := range tu.Large {
		// The legend names the curves in full; a label names the method
		// alone ("cma from 2.7M"), short enough not to run past the next
		// boundary.
		method := strings.TrimPrefix(r.Method, profile.Rendezvous+"/")
		mk := mark{size: r.From, label: fmt.Sprintf("%s from %s", method, units.FormatSize(r.From))}
		if i == 0 {
			// The first range starts at the rendezvous threshold, where
			// eager sends end: a boundary of another decision, drawn
			// lighter than the ones between methods.
			mk.dotted = true
		}
		f.marks = append(f.marks, mk)
	}
	return f
}

// rendezvousMethods lists t's rendezvous curves: the single push
// rendezvous if sampled, the named methods in Tune's order of preference,
// then any other, by name (a newer sampler's method is drawn too).
func rendezvousMethods(t *profile.Transport) []string {
	var out []string
	if len(t.Methods[profile.Rendezvous]) > 0 {
		out = append(out, profile.Rendezvous)
	}
	for _, m := range profile.LargeMethods {
		if name := profile.RendezvousVia(m); len(t.Methods[name]) > 0 {
			out = append(out, name)
		}
	}
	for _, name := range t.MethodNames() {
		if strings.HasPrefix(name, profile.Rendezvous+"/") && !slices.Contains(out, name) && len(t.Methods[name]) > 0 {
			out = append(out, name)
		}
	}
	return out
}
