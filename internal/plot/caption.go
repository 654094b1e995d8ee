package plot

import (
	"strings"

	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
)

// captionLines bounds a caption: a decision's rule is a sentence or two,
// and a figure that gave more of its height to words would show less of
// its curves. What does not fit ends in an ellipsis; `commtune info`
// prints the whole rule.
const captionLines = 3

// wrap breaks s into lines no wider than w in style sty, at spaces, at
// most maxLines of them; the last ends in "…" when s did not fit. A word
// wider than w has a line of its own and overflows it.
func wrap(s string, sty text.Style, w vg.Length, maxLines int) []string {
	words := strings.Fields(s)
	var lines []string
	cur := ""
	for i, word := range words {
		next := word
		if cur != "" {
			next = cur + " " + word
		}
		if cur == "" || sty.Width(next) <= w {
			cur = next
			continue
		}
		if len(lines) == maxLines-1 {
			return append(lines, ellipsize(cur+" "+strings.Join(words[i:], " "), sty, w))
		}
		lines = append(lines, cur)
		cur = word
	}
	if cur != "" {
		lines = append(lines, cur)
	}
	return lines
}

// ellipsize shortens s at a space until it and "…" fit in w.
func ellipsize(s string, sty text.Style, w vg.Length) string {
	for sty.Width(s+" …") > w {
		i := strings.LastIndexByte(s, ' ')
		if i <= 0 {
			break
		}
		s = s[:i]
	}
	return strings.TrimRight(s, " ,;:") + " …"
}
