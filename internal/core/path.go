package core

import (
	"slices"
	"strings"

	"github.com/commtune/commtune/internal/driver"
	"github.com/commtune/commtune/internal/profile"
)

// Layout is how a message's bytes lie in the sender's memory, which
// decides whether its receiver may pull it.
type Layout uint8

const (
	// Contiguous is one buffer (Isend, Send): a rendezvous whose Large
	// entry is MethodPull is pulled by the receiver.
	Contiguous Layout = iota
	// Segmented is a list of segments (IsendV): never pulled, since an
	// RTS-pull names one address, it is pushed by the Put method the
	// policy names for its size instead.
	Segmented
)

// Path names how a message of n bytes travels under p over transport
// ("shm", "tcp" …) when eager credit allows, in the profile's curve names.
// It is the one answer to "which path does size n take": the engine
// chooses by the same rule at send time (largeMethods.pick), and Init's
// plans, `commtune info`, the sampler, the benchmarks and the demo report
// it.
//
//   - Up to p.Rendezvous bytes the message goes eagerly: profile.EagerCopy
//     below p.Iovec (a blocking send of a few bytes is copied inside its
//     request, the same path), profile.EagerIovec from it on.
//   - Above, it goes by rendezvous, by the Large entry for n: the last
//     one whose Min is at or below n. A Contiguous message whose entry is
//     MethodPull is pulled by its receiver: "rendezvous/cma". A Segmented
//     one skips pull entries and takes the last Put method at or below n.
//     A Put method m gives "rendezvous/m".
//   - With no such entry, the rail's default push: "rendezvous/copy" on
//     shared memory (through the ring), profile.Rendezvous elsewhere.
//
// A pull that fails (the peer's memory unreadable mid-job) falls back to
// the default push. Without eager credit, a message of up to
// p.Rendezvous bytes takes its size's rendezvous path. A one-sided put
// (Engine.PutV) has no eager path: at every size its data moves as a
// Segmented rendezvous's does.
func (p Policy) Path(n int64, transport string, l Layout) string {
	switch {
	case n <= int64(p.Rendezvous) && n < int64(p.Iovec):
		return profile.EagerCopy
	case n <= int64(p.Rendezvous):
		return profile.EagerIovec
	}
	lm := sortLarge(p.Large)
	i := lm.pick(int(min(n, maxInt)), l == Contiguous && n > 0)
	if i < 0 {
		return defaultPush(transport)
	}
	return RendezvousCurve(lm[i].name)
}

const maxInt = int64(^uint(0) >> 1)

// defaultPush names the curve of a rendezvous by the rail's own method
// (driver.MethodDefault): shared memory's rails copy through the ring
// (driver.MethodCopy); other transports have one push, the profile's
// plain Rendezvous curve.
func defaultPush(transport string) string {
	if transport == "shm" {
		return RendezvousCurve(driver.MethodCopy.String())
	}
	return profile.Rendezvous
}

// PathRange is a span of message sizes that take one path (Path).
type PathRange struct {
	From int64  `json:"from"`
	To   int64  `json:"to,omitempty"` // exclusive; 0: no end
	Path string `json:"method"`
}

// Ranges lists the path (Path) of every message size under p, merging
// neighbours that take the same one.
func (p Policy) Ranges(transport string, l Layout) []PathRange {
	bounds := []int64{0, int64(p.Rendezvous) + 1}
	if p.Iovec > 0 && p.Iovec <= p.Rendezvous {
		bounds = append(bounds, int64(p.Iovec))
	}
	for _, e := range p.Large {
		if e.Min > p.Rendezvous {
			bounds = append(bounds, int64(e.Min))
		}
	}
	slices.Sort(bounds)
	bounds = slices.Compact(bounds)
	var rs []PathRange
	for _, from := range bounds {
		path := p.Path(max(from, 1), transport, l) // an empty message carries nothing to copy
		if n := len(rs); n > 0 && rs[n-1].Path == path {
			continue
		}
		if n := len(rs); n > 0 {
			rs[n-1].To = from
		}
		rs = append(rs, PathRange{From: from, Path: path})
	}
	return rs
}

// The profile and the configuration name the large-message methods as
// profile.LargeMethods does ("copy", "cma", "vmsplice", "cachefree"); the
// core names a Put method as the driver does (driver.Method, the same
// words) and the receiver's pull MethodPull, which the profile calls
// "cma" after the mechanism that carries it between processes. The four
// functions below are the only place one is turned into the other.

// pullName is the profile's name for MethodPull.
const pullName = "cma"

// MethodFor returns the core's method, for Policy.Large, of one of the
// profile's large-message methods: MethodPull for "cma", a Put method
// under its own name.
func MethodFor(large string) string {
	if large == pullName {
		return MethodPull
	}
	return large
}

// LargeName returns the profile's name of the core's method m: "cma" for
// MethodPull, a Put method's own name.
func LargeName(m string) string {
	if m == MethodPull {
		return pullName
	}
	return m
}

// RendezvousCurve returns the profile's curve of a rendezvous by the
// core's method m ("pull": "rendezvous/cma").
func RendezvousCurve(m string) string { return profile.RendezvousVia(LargeName(m)) }

// MethodOfCurve returns the core's method of one of the profile's
// rendezvous curves ("rendezvous/cma": MethodPull).
func MethodOfCurve(curve string) string {
	return MethodFor(strings.TrimPrefix(curve, profile.Rendezvous+"/"))
}
