package control

import (
	"slices"

	"github.com/commtune/commtune/internal/core"
	"github.com/commtune/commtune/internal/profile"
)

// Path names how policy p sends a message of n bytes over transport, in
// the profile's curve names: which eager variant, or which rendezvous
// method. Blocking sends below the iovec threshold are copied; the rail's
// own method is "copy" on shared memory and "push" elsewhere.
func Path(p core.Policy, n int64, transport string) string {
	switch {
	case n <= int64(p.Rendezvous) && n < int64(p.Iovec):
		return profile.EagerCopy
	case n <= int64(p.Rendezvous):
		return profile.EagerIovec
	}
	m := p.PathFor(int(min(n, int64(maxInt))))
	switch {
	case m == core.MethodPull:
		m = "cma"
	case m == "push" && transport == "shm":
		m = "copy"
	}
	return profile.RendezvousVia(m)
}

const maxInt = int(^uint(0) >> 1)

// Range is a span of message sizes that travel one way (Path).
type Range struct {
	From int64  `json:"from"`
	To   int64  `json:"to,omitempty"` // exclusive; 0: no end
	Path string `json:"method"`
}

// Ranges lists the path of every message size under p, merging neighbours
// that take the same one.
func Ranges(p core.Policy, transport string) []Range {
	bounds := []int64{0, int64(p.Rendezvous) + 1}
	if p.Iovec > 0 && p.Iovec <= p.Rendezvous {
		bounds = append(bounds, int64(p.Iovec))
	}
	for _, l := range p.Large {
		if l.Min > p.Rendezvous {
			bounds = append(bounds, int64(l.Min))
		}
	}
	slices.Sort(bounds)
	bounds = slices.Compact(bounds)
	var rs []Range
	for _, from := range bounds {
		path := Path(p, max(from, 1), transport) // an empty message carries nothing to copy
		if n := len(rs); n > 0 && rs[n-1].Path == path {
			continue
		}
		if n := len(rs); n > 0 {
			rs[n-1].To = from
		}
		rs = append(rs, Range{From: from, Path: path})
	}
	return rs
}
