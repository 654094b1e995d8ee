package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// bar is the progress display: a bar on a terminal, a line per step
// otherwise (logs and pipes get no carriage returns).
type bar interface {
	Describe(string)
	Set(int)
	Finish()
}

func newBar(w io.Writer, verb string, total int) bar {
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		return &ttyBar{verb: verb, b: progressbar.NewOptions(total,
			progressbar.OptionSetWriter(w),
			progressbar.OptionSetDescription(verb),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionShowCount(),
			progressbar.OptionSetWidth(30),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionClearOnFinish(),
		)}
	}
	return &lineBar{w: w, verb: verb, total: total}
}

type ttyBar struct {
	verb string
	b    *progressbar.ProgressBar
}

func (t *ttyBar) Describe(s string) { t.b.Describe(fmt.Sprintf("%s %-10s", t.verb, s)) }
func (t *ttyBar) Set(n int)         { t.b.Set(n) }
func (t *ttyBar) Finish()           { t.b.Finish() }

// lineBar prints a line whenever the first word of the description (the
// transport sampled, the size benchmarked) changes, and at every further
// tenth of the steps: a long pass over one transport shows it advancing.
type lineBar struct {
	w     io.Writer
	verb  string
	total int
	last  string
	done  int
}

func (l *lineBar) Describe(s string) {
	t, _, _ := strings.Cut(s, " ")
	if t != l.last {
		l.last = t
		l.print()
	}
}

func (l *lineBar) Set(n int) {
	tenth := func(k int) int { return k * 10 / max(l.total, 1) }
	crossed := tenth(n) > tenth(l.done) && n < l.total
	l.done = n
	if crossed {
		l.print()
	}
}

func (l *lineBar) print() {
	fmt.Fprintf(l.w, "%s %s (%d of %d steps done)\n", l.verb, l.last, l.done, l.total)
}

func (l *lineBar) Finish() {}
