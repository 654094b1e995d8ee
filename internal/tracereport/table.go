package tracereport

import (
	"fmt"
	"io"
	"strconv"
	"strings"
)

// maxRankColumns bounds the operations of the per-rank table: the rest
// are summed in a column of their own, so that the table fits a terminal.
const maxRankColumns = 6

// WriteTable writes r as aligned text tables, after mpiP's report: the
// aggregate time per operation, the time per rank, the algorithms the
// calls took, and with call sites the time per operation and site. Times
// are in human units (ns, µs, ms, s), shares in percent.
func WriteTable(w io.Writer, r Report) error {
	var b strings.Builder
	fmt.Fprintf(&b, "job %s: %d of %d ranks, %d spans", r.Job, len(r.Ranks), r.Size, r.Spans)
	if r.Dropped > 0 {
		fmt.Fprintf(&b, ", %d dropped (the file system refused them: the times below miss them)", r.Dropped)
	}
	b.WriteString("\n")
	if len(r.Ranks) > 0 {
		fmt.Fprintf(&b, "wall time (Init to Close): %s per rank on average, %s over all ranks: the base of the shares\n",
			duration(r.WallSum/int64(len(r.Ranks))), duration(r.WallSum))
	}
	if len(r.Ops) == 0 {
		b.WriteString("\nno calls recorded\n")
		_, err := io.WriteString(w, b.String())
		return err
	}

	section(&b, "Aggregate time (top-level calls, every rank)")
	rowTable(r.Ops, false).write(&b)

	section(&b, "Time per rank")
	rankTable(r).write(&b)

	if len(r.Algorithms) > 0 {
		section(&b, "Algorithms (every call that named one)")
		algTable(r.Algorithms).write(&b)
	}
	if r.Sites != nil {
		section(&b, "Call site time")
		rowTable(r.Sites, true).write(&b)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// section starts a table, as mpiP marks its sections.
func section(b *strings.Builder, title string) {
	fmt.Fprintf(b, "\n@--- %s ---\n", title)
}

// rowTable lays out rows, with their call sites if sites.
func rowTable(rows []Row, sites bool) *table {
	t := &table{}
	head := []string{"Operation"}
	if sites {
		head = append(head, "Site")
	}
	t.header(append(head, "Calls>", "Total>", "Share>", "Mean>", "Slowest rank>", "its total>", "Imbalance>")...)
	for _, row := range rows {
		cells := []string{row.Op}
		if sites {
			cells = append(cells, siteName(row.Site))
		}
		t.row(append(cells, strconv.FormatInt(row.Calls, 10), duration(row.Total), percent(row.Share), duration(row.Mean),
			strconv.Itoa(row.Slowest), duration(row.SlowestTotal), strconv.FormatFloat(row.Imbalance, 'f', 2, 64))...)
	}
	return t
}

// siteName shows a call site in a table: on one line, "-" if unknown.
func siteName(s string) string {
	if s == "" {
		return "-"
	}
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
}

// rankTable lays out the time per rank: a row per rank, a column per
// operation (the largest ones, the rest together), then all of them and
// their share of the rank's wall time.
func rankTable(r Report) *table {
	m := r.PerRank
	cols := min(len(m.Ops), maxRankColumns)
	if len(m.Ops) == maxRankColumns+1 {
		cols = len(m.Ops) // an "other" column of one operation says less than its name
	}
	t := &table{}
	head := []string{"Rank>"}
	for _, op := range m.Ops[:cols] {
		head = append(head, op+">")
	}
	if cols < len(m.Ops) {
		head = append(head, fmt.Sprintf("%d others>", len(m.Ops)-cols))
	}
	t.header(append(head, "All>", "of wall>")...)
	for i, rank := range m.Ranks {
		cells := []string{strconv.Itoa(rank)}
		var all, other int64
		for o := range m.Ops {
			all += m.Total[o][i]
			if o < cols {
				cells = append(cells, duration(m.Total[o][i]))
			} else {
				other += m.Total[o][i]
			}
		}
		if cols < len(m.Ops) {
			cells = append(cells, duration(other))
		}
		share := 0.0
		if r.Wall[i] > 0 {
			share = float64(all) / float64(r.Wall[i])
		}
		t.row(append(cells, duration(all), percent(share))...)
	}
	return t
}

// algTable lays out the algorithm counts.
func algTable(algs []OpAlgorithms) *table {
	t := &table{}
	t.header("Operation", "Algorithm", "Chosen by", "Calls>", "of calls>")
	for _, oa := range algs {
		for i, a := range oa.Algs {
			op := oa.Op
			if i > 0 {
				op = ""
			}
			t.row(op, a.Alg, cmpOr(a.By, "-"), strconv.FormatInt(a.Calls, 10), percent(float64(a.Calls)/float64(oa.Calls)))
		}
	}
	return t
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// table is a text table: columns padded to their widest cell, numbers
// right-aligned.
type table struct {
	right []bool
	rows  [][]string
}

// header sets the column names; a name ending in ">" is right-aligned.
func (t *table) header(names ...string) {
	cells := make([]string, len(names))
	t.right = make([]bool, len(names))
	for i, n := range names {
		cells[i], t.right[i] = strings.CutSuffix(n, ">")
	}
	t.rows = append(t.rows, cells)
}

func (t *table) row(cells ...string) { t.rows = append(t.rows, cells) }

func (t *table) write(b *strings.Builder) {
	width := make([]int, len(t.right))
	for _, r := range t.rows {
		for i, c := range r {
			width[i] = max(width[i], len([]rune(c)))
		}
	}
	for _, r := range t.rows {
		var line strings.Builder
		for i, c := range r {
			pad := strings.Repeat(" ", width[i]-len([]rune(c)))
			if i > 0 {
				line.WriteString("  ")
			}
			if t.right[i] {
				line.WriteString(pad + c)
			} else {
				line.WriteString(c + pad)
			}
		}
		b.WriteString(strings.TrimRight(line.String(), " "))
		b.WriteString("\n")
	}
}

// duration formats ns in the unit that suits it, with three significant
// digits: "830 ns", "12.4 µs", "1.20 ms", "3.51 s".
func duration(ns int64) string {
	if ns < 0 {
		return "-" + duration(-ns)
	}
	if ns < 1000 {
		return strconv.FormatInt(ns, 10) + " ns"
	}
	v := float64(ns)
	for _, u := range []struct {
		name  string
		scale float64
	}{{"µs", 1e3}, {"ms", 1e6}, {"s", 1e9}} {
		x := v / u.scale
		if x < 999.5 || u.name == "s" {
			return sig3(x) + " " + u.name
		}
	}
	return "" // not reached
}

// sig3 formats x (at least 1) with three significant digits, or as an
// integer from 1000 up.
func sig3(x float64) string {
	switch {
	case x < 9.995:
		return strconv.FormatFloat(x, 'f', 2, 64)
	case x < 99.95:
		return strconv.FormatFloat(x, 'f', 1, 64)
	}
	return strconv.FormatFloat(x, 'f', 0, 64)
}

// percent formats a share (1 = 100 %) in percent: two decimals below
// 10 %, one above.
func percent(share float64) string {
	p := share * 100
	if p < 9.995 {
		return strconv.FormatFloat(p, 'f', 2, 64) + " %"
	}
	return strconv.FormatFloat(p, 'f', 1, 64) + " %"
}
