package main

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/commtune/commtune/internal/profile"
	"github.com/commtune/commtune/internal/units"
)

// selection is what a profile decides for one transport, as `commtune
// info` shows it: the method for each size range, then each threshold
// with its reason (UCX_PROTO_INFO's idea).
type selection struct {
	Transport string           `json:"transport"`
	Ranges    []selectionRange `json:"ranges"`
	Decisions []selectionWhy   `json:"decisions"`
	Error     string           `json:"error,omitempty"`
}

type selectionRange struct {
	From   int64  `json:"from"`
	To     int64  `json:"to,omitempty"` // exclusive; 0: no end
	Method string `json:"method"`
}

type selectionWhy struct {
	Threshold string `json:"threshold"`
	Size      int64  `json:"size,omitempty"`
	Rule      string `json:"rule"`
}

// selections derives every transport's selection from p.
func selections(p *profile.Profile) []selection {
	var names []string
	for t := range p.Transports {
		names = append(names, t)
	}
	slices.Sort(names)
	var out []selection
	for _, t := range names {
		s := selection{Transport: t}
		tu, err := p.Tune(t, nil)
		if err != nil {
			s.Error = err.Error()
			out = append(out, s)
			continue
		}
		s.Ranges = tuningRanges(tu)
		for _, d := range tu.Decisions {
			why := selectionWhy{Threshold: d.Name, Size: d.Size, Rule: d.Rule}
			switch {
			case d.Name == "rendezvous":
				why.Size = tu.Rendezvous + 1
			case d.Name == "aggregation" && tu.Aggregation == 0:
				why.Size = 0
			}
			s.Decisions = append(s.Decisions, why)
		}
		for _, w := range tu.LargeWhy {
			s.Decisions = append(s.Decisions, selectionWhy{Threshold: "large", Rule: w})
		}
		out = append(out, s)
	}
	return out
}

// tuningRanges lists the path of every size under tu, merging neighbours
// that take the same one.
func tuningRanges(tu *profile.Tuning) []selectionRange {
	var rs []selectionRange
	add := func(from, to int64, m string) {
		if to != 0 && to <= from {
			return
		}
		if n := len(rs); n > 0 && rs[n-1].Method == m {
			rs[n-1].To = to
			return
		}
		rs = append(rs, selectionRange{From: from, To: to, Method: m})
	}
	eagerEnd := tu.Rendezvous + 1
	if tu.Iovec <= 1 { // by reference from the first byte: nothing is copied
		add(0, eagerEnd, profile.EagerIovec)
	} else {
		add(0, min(tu.Iovec, eagerEnd), profile.EagerCopy)
		add(min(tu.Iovec, eagerEnd), eagerEnd, profile.EagerIovec)
	}
	if len(tu.Large) == 0 {
		add(eagerEnd, 0, profile.Rendezvous)
		return rs
	}
	for i, r := range tu.Large {
		to := int64(0)
		if i+1 < len(tu.Large) {
			to = tu.Large[i+1].From
		}
		add(max(r.From, eagerEnd), to, r.Method)
	}
	return rs
}

// writeSelection prints each transport's selection table.
func writeSelection(w io.Writer, p *profile.Profile) error {
	return writeSelections(w, selections(p))
}

func writeSelections(w io.Writer, sels []selection) error {
	var b strings.Builder
	for _, s := range sels {
		if s.Error != "" {
			fmt.Fprintf(&b, "%-4s %s\n", s.Transport, s.Error)
			continue
		}
		parts := make([]string, len(s.Ranges))
		for i, r := range s.Ranges {
			to := ""
			if r.To != 0 {
				to = boundaryLabel(r.To)
			}
			parts[i] = fmt.Sprintf("%s..%s %s", boundaryLabel(r.From), to, r.Method)
		}
		fmt.Fprintf(&b, "%-4s %s\n", s.Transport, strings.Join(parts, " | "))
		for _, d := range s.Decisions {
			size := ""
			if d.Size > 0 {
				size = units.FormatSize(d.Size)
			}
			fmt.Fprintf(&b, "       %-11s %-6s %s\n", d.Threshold, size, d.Rule)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// boundaryLabel prints a range boundary. Ranges are half-open, so the
// eager limit's boundary is one past a round size (16K + 1); it reads
// better as the round size, "up to 16K", than as "16.0K".
func boundaryLabel(n int64) string {
	if l := units.FormatSize(n - 1); n > 1 && !strings.Contains(l, ".") && strings.Contains(units.FormatSize(n), ".") {
		return l
	}
	return units.FormatSize(n)
}
