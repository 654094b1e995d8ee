package plot

import (
	"fmt"
	"strings"

	"github.com/commtune/commtune/internal/profile"
	"github.com/commtune/commtune/internal/units"
)

// decisionFigure describes the figure of one threshold: the two curves
// the decision compared, over the sizes it compared them, and the size
// where the method for larger messages takes over. memcpy, if not nil, is
// drawn as a reference.
func decisionFigure(transport string, d profile.Decision, memcpy profile.Curve) *figure {
	f := &figure{name: fileName(transport) + "-" + fileName(d.Name)}
	below, above := clip(d.BelowCurve, d.Lo, d.Hi), clip(d.AboveCurve, d.Lo, d.Hi)
	f.series = []series{
		{label: d.Below, curve: below, color: colorOf(0)},
		{label: d.Above, curve: above, color: colorOf(1)},
	}
	f.series = withReference(f.series, memcpy)
	if switches(d) {
		at := units.FormatSize(d.Size)
		f.title = fmt.Sprintf("%s: %s threshold %s", transport, d.Name, at)
		f.marks = []mark{{size: d.Size, label: "threshold " + at}}
	} else {
		f.title = fmt.Sprintf("%s: %s threshold: no switch in range", transport, d.Name)
	}
	f.caption = fmt.Sprintf("Compared from %s to %s: %s.", units.FormatSize(d.Lo), units.FormatSize(d.Hi), strings.TrimSuffix(d.Rule, "."))
	return f
}

// switches reports whether the method changes inside the compared range:
// not when the one for smaller messages wins throughout (Never), nor when
// the one for larger messages does from the first size.
func switches(d profile.Decision) bool { return !d.Never() && d.Size > d.Lo }

// clip returns the samples of c within [lo, hi]: a decision compares its
// curves over that range only (the rendezvous one, for instance, up to
// the eager limit, while the rendezvous curve goes on to the largest
// size), and beyond it one curve would run alone and say nothing about the
// threshold. A curve with no sample in range is kept whole rather than
// left out.
func clip(c profile.Curve, lo, hi int64) profile.Curve {
	if in := within(c, lo, hi); len(in) > 0 {
		return in
	}
	return c
}

// within returns the samples of c within [lo, hi].
func within(c profile.Curve, lo, hi int64) profile.Curve {
	var out profile.Curve
	for _, s := range c {
		if s.Size >= lo && s.Size <= hi {
			out = append(out, s)
		}
	}
	return out
}

// withReference appends the memcpy reference to ss, over the sizes they
// span: the plain copy is the floor of what copying costs a transfer, and
// it is worth reading only where the methods are.
func withReference(ss []series, memcpy profile.Curve) []series {
	var lo, hi int64 = 1 << 62, 0
	for _, s := range ss {
		if len(s.curve) > 0 {
			a, b := s.curve.Span()
			lo, hi = min(lo, a), max(hi, b)
		}
	}
	ref := within(memcpy, lo, hi)
	if len(ref) < 2 { // a line needs two points
		return ss
	}
	return append(ss, series{label: "memcpy (plain copy, reference)", curve: ref, color: referenceColor, reference: true})
}
