package profile

import (
	"fmt"
	"slices"
	"strings"
)

// Tuning is what a profile decides for one transport.
type Tuning struct {
	Transport string
	// Iovec is the smallest eager payload sent by reference; above
	// MaxEager it means never.
	Iovec int64
	// Rendezvous is the largest message sent eagerly.
	Rendezvous int64
	// Aggregation: two packets smaller than this are faster aggregated
	// into one (0: never worth it).
	Aggregation int64
	// Large lists the rendezvous methods by size; empty when the transport
	// has a single one (Rendezvous).
	Large []Range
	// MaxEager is the transport's eager limit when sampled.
	MaxEager int64
	// Decisions explains Iovec, Rendezvous and Aggregation; LargeWhy the
	// boundaries of Large.
	Decisions []Decision
	LargeWhy  []string
	// rndvRanges divides every sampled size among the rendezvous methods:
	// the curve the eager limit was found against.
	rndvRanges []Range
}

// LargeMethods lists the large-message method names a transport's
// rendezvous curves may carry, in order of preference on a tie.
var LargeMethods = []string{"copy", "cma", "vmsplice", "cachefree"}

// Tune derives the thresholds of transport from its curves (seed 000
// §III-B), in the seed's order: iovec against copy first; eager, using the
// better of the two by that threshold, against rendezvous, never above the
// eager limit; aggregation last. Where the transport has several
// large-message methods, only those listed in available are considered
// (nil: every one sampled), so that a method the kernel forbids now is
// not chosen from an old sample.
func (p *Profile) Tune(transport string, available []string) (*Tuning, error) {
	t := p.Transports[transport]
	if t == nil {
		return nil, fmt.Errorf("profile: no samples for transport %s", transport)
	}
	return t.tune(transport, available)
}

// tune is Tune on the curves of t, named transport.
func (t *Transport) tune(transport string, available []string) (*Tuning, error) {
	copyC, iovC := t.Methods[EagerCopy], t.Methods[EagerIovec]
	if len(copyC) == 0 || len(iovC) == 0 {
		return nil, fmt.Errorf("profile: %s lacks the %s and %s samples", transport, EagerCopy, EagerIovec)
	}
	tu := &Tuning{Transport: transport, MaxEager: t.MaxEager}
	maxEager := t.MaxEager
	if maxEager <= 0 {
		_, maxEager = copyC.Span()
	}

	iov := Switch("iovec", copyC, iovC, EagerCopy, EagerIovec, 1, maxEager)
	tu.Iovec = iov.Size
	tu.Decisions = append(tu.Decisions, iov)
	eager := compose(map[string]Curve{EagerCopy: copyC, EagerIovec: iovC}, func(size int64) string {
		if size >= tu.Iovec {
			return EagerIovec
		}
		return EagerCopy
	})

	large := map[string]Curve{}
	var order []string
	if c := t.Methods[Rendezvous]; len(c) > 0 {
		large[Rendezvous], order = c, []string{Rendezvous}
	}
	for _, m := range LargeMethods {
		name := RendezvousVia(m)
		if c := t.Methods[name]; len(c) > 0 && (available == nil || slices.Contains(available, m)) {
			large[name], order = c, append(order, name)
		}
	}
	if len(large) == 0 {
		return nil, fmt.Errorf("profile: %s has no rendezvous samples", transport)
	}
	var lo, hi int64 = 1 << 62, 0
	for _, c := range large {
		a, b := c.Span()
		lo, hi = min(lo, a), max(hi, b)
	}
	ranges, why := Envelope(large, order, lo, hi)
	rndvName := Rendezvous
	if len(order) > 1 || order[0] != Rendezvous { // named methods, not the one push
		tu.Large, tu.LargeWhy = ranges, why
		rndvName = "rendezvous (best method)"
	}
	tu.rndvRanges = ranges
	rndvCurve := compose(large, func(size int64) string { return MethodAt(ranges, size) })
	rv := Switch("rendezvous", eager, rndvCurve, "eager", rndvName, 1, maxEager)
	tu.Rendezvous = min(rv.Size-1, maxEager)
	tu.Decisions = append(tu.Decisions, rv)
	if tu.Large != nil && tu.Rendezvous+1 < hi {
		// Only sizes above the eager limit take a large-message method:
		// divide those (the whole range served to find the limit).
		tu.Large, tu.LargeWhy = Envelope(large, order, tu.Rendezvous+1, hi)
	}

	if two, agg := t.Methods[TwoPackets], t.Methods[Aggregated]; len(two) > 0 && len(agg) > 0 {
		_, aggHi := agg.Span()
		ad := Switch("aggregation", agg, two, Aggregated, TwoPackets, 1, aggHi)
		tu.Aggregation = ad.Size
		if ad.Size <= 1 {
			tu.Aggregation = 0
		}
		tu.Decisions = append(tu.Decisions, ad)
	}
	return tu, nil
}

// Decision returns the decision named name, if any.
func (tu *Tuning) Decision(name string) (Decision, bool) {
	for _, d := range tu.Decisions {
		if d.Name == name {
			return d, true
		}
	}
	return Decision{}, false
}

// String summarizes tu on one line.
func (tu *Tuning) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: iovec from %d, eager up to %d", tu.Transport, tu.Iovec, tu.Rendezvous)
	for _, r := range tu.Large {
		fmt.Fprintf(&b, ", %s from %d", r.Method, r.From)
	}
	if tu.Aggregation > 0 {
		fmt.Fprintf(&b, ", aggregate below %d", tu.Aggregation)
	}
	return b.String()
}
