package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/commtune/commtune/internal/core"
	"github.com/commtune/commtune/internal/job"
	"github.com/commtune/commtune/internal/profile"
	"github.com/commtune/commtune/internal/units"
)

// selection is what a job here decides for a peer of one transport, as
// `commtune info` shows it (job.PlanFor): the path of each size range,
// then each threshold with its reason (UCX_PROTO_INFO's idea), then how
// the scheduler spreads messages over the rails.
type selection struct {
	Transport string           `json:"transport"`
	Ranges    []core.PathRange `json:"ranges"`
	Decisions []selectionWhy   `json:"decisions"`
	Strategy  string           `json:"strategy,omitempty"`
	Error     string           `json:"error,omitempty"`
}

type selectionWhy struct {
	Threshold string `json:"threshold"`
	Size      int64  `json:"size,omitempty"`
	Rule      string `json:"rule"`
}

// selections derives, for every transport p has samples of, what a job
// under this environment would decide.
func selections(p *profile.Profile) []selection {
	var out []selection
	for _, t := range slices.Sorted(maps.Keys(p.Transports)) {
		s := selection{Transport: t}
		plan, err := job.PlanFor(p, t)
		switch {
		case err != nil:
			s.Error = err.Error()
		case plan.TuneErr != nil:
			s.Error = plan.TuneErr.Error()
		}
		if s.Error != "" {
			out = append(out, s)
			continue
		}
		s.Ranges = plan.Policy.Ranges(t, core.Contiguous)
		if tu := plan.Tuning; tu != nil {
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
		}
		s.Strategy = plan.Strategy
		for _, w := range plan.Why {
			s.Decisions = append(s.Decisions, selectionWhy{Threshold: "scheduling", Rule: w})
		}
		out = append(out, s)
	}
	return out
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
		fmt.Fprintf(&b, "%-4s %s\n", s.Transport, formatRanges(s.Ranges))
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

// formatRanges prints ranges on one line: "0..2K eager-copy | 2K.. …".
func formatRanges(rs []core.PathRange) string {
	parts := make([]string, len(rs))
	for i, r := range rs {
		to := ""
		if r.To != 0 {
			to = boundaryLabel(r.To)
		}
		parts[i] = fmt.Sprintf("%s..%s %s", boundaryLabel(r.From), to, r.Path)
	}
	return strings.Join(parts, " | ")
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
