package trace

import (
	"cmp"
	"fmt"
	"slices"
)

// check checks the events against otherData: every span belongs to a
// rank the file describes, each rank holds as many spans as it says, and
// the spans of a lane follow each other or nest.
func (c *content) check() error {
	described := make(map[int]bool, len(c.ranks))
	for _, r := range c.ranks {
		described[r.Rank] = true
	}
	for pid := range c.spans {
		if !described[pid] {
			if c.format == FormatRank {
				return fmt.Errorf("%w: spans of pid %d in the file of rank %d", ErrInvalid, pid, c.ranks[0].Rank)
			}
			return fmt.Errorf("%w: spans of pid %d, which otherData.ranks does not describe", ErrInvalid, pid)
		}
	}
	for _, r := range c.ranks {
		spans := c.spans[r.Rank]
		if int64(len(spans)) != r.Spans {
			return fmt.Errorf("%w: rank %d: otherData says %d spans, the file holds %d", ErrInvalid, r.Rank, r.Spans, len(spans))
		}
		sortSpans(spans)
		if err := checkNesting(spans); err != nil {
			return fmt.Errorf("%w: rank %d %v", ErrInvalid, r.Rank, err)
		}
	}
	return nil
}

// compareSpans orders a rank's spans: by start, longer first (a parent
// before what it holds), then by lane.
func compareSpans(a, b Span) int {
	switch {
	case a.Start != b.Start:
		return cmp.Compare(a.Start, b.Start)
	case a.End != b.End:
		return cmp.Compare(b.End, a.End)
	}
	return a.Lane - b.Lane
}

// sortSpans sorts spans by compareSpans, keeping the file's order among
// equals.
func sortSpans(spans []Span) {
	if !slices.IsSortedFunc(spans, compareSpans) {
		slices.SortStableFunc(spans, compareSpans)
	}
}

// checkNesting checks that the spans of each lane, sorted, follow each
// other or nest: a call holds a lane from its start to its end, and only
// the calls it makes itself run on that lane meanwhile.
func checkNesting(spans []Span) error {
	open := map[int][]int{} // lane: indices of the spans that hold it, outermost first
	for i, s := range spans {
		stack := open[s.Lane]
		for len(stack) > 0 && spans[stack[len(stack)-1]].End <= s.Start {
			stack = stack[:len(stack)-1]
		}
		if len(stack) > 0 {
			if p := spans[stack[len(stack)-1]]; s.End > p.End {
				return fmt.Errorf("lane %d: %s [%s, %s µs] and %s [%s, %s µs] overlap without nesting",
					s.Lane, p.Name, micros(p.Start), micros(p.End), s.Name, micros(s.Start), micros(s.End))
			}
		}
		open[s.Lane] = append(stack, i)
	}
	return nil
}

// micros formats ns as the file writes it.
func micros(ns int64) string { return string(appendMicros(nil, ns)) }
