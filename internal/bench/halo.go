package bench

import (
	"context"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/commtune/commtune"
	"github.com/commtune/commtune/internal/stats"
)

// The halo benchmark is seed 003's experiment (Fig. 2–4): a 3-D solver
// whose every iteration exchanges the halo of each rank's block (mesh
// points per process: 32×32×32, 64×32×32 or 64×64×32) and applies the
// 7-point stencil, run for K iterations with each implementation fixed,
// then with each run-time selector, whose total includes its exploration.

// HaloConfig says what to measure.
type HaloConfig struct {
	Grid    [3]int   // interior mesh points of each rank's block
	Iters   int      // solver iterations per run (seed 003: 500)
	Runs    []string // implementation names or HaloSelectors, in order
	Repeats int      // rounds of every run, interleaved (at least 1)
	// Progress, if set, is called on rank 0 after each run.
	Progress func(done, total int, what string)
}

// HaloRun is one run: Iters iterations with one implementation or one
// selector.
type HaloRun struct {
	Name    string  `json:"name"`    // the implementation or the selector
	Seconds float64 `json:"seconds"` // the slowest rank's time for the iterations
	// Choice, Calls and Selections describe a selector's run: the
	// implementation it ended on, the exchanges its selection measured,
	// and the selections it made (more than 1 if the watch resumed one).
	Choice     string `json:"choice,omitempty"`
	Calls      int    `json:"calls,omitempty"`
	Selections int    `json:"selections,omitempty"`
}

// HaloReport is the JSON document `commtune bench halo --json` prints.
type HaloReport struct {
	Bench     string    `json:"bench"`
	Ranks     int       `json:"ranks"`
	Dims      []int     `json:"dims"`
	Grid      [3]int    `json:"grid"`
	Iters     int       `json:"iters"`
	Transport string    `json:"transport"`
	Runs      []HaloRun `json:"runs"` // every run, in the order they ran
}

// Halo runs cfg on every rank of c; rank 0 returns the runs. The ranks form
// a DimsCreate grid with open borders, each rank holding a block of
// cfg.Grid interior points with a halo of width 1. Each run has a Cart of
// its own, so that no selection learns from another run.
func Halo(ctx context.Context, c *commtune.Comm, cfg HaloConfig) ([]HaloRun, error) {
	dims := []int{0, 0, 0}
	if err := commtune.DimsCreate(c.Size(), dims); err != nil {
		return nil, err
	}
	ext := cfg.Grid[:]
	cells := (ext[0] + 2) * (ext[1] + 2) * (ext[2] + 2)
	u, v := make([]float64, cells), make([]float64, cells)
	var out []HaloRun
	total := max(cfg.Repeats, 1) * len(cfg.Runs)
	for rep := range max(cfg.Repeats, 1) {
		for i, name := range cfg.Runs {
			r, err := haloRun(ctx, c, dims, ext, u, v, name, cfg.Iters)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			out = append(out, r)
			if cfg.Progress != nil && c.Rank() == 0 {
				cfg.Progress(rep*len(cfg.Runs)+i+1, total, name)
			}
		}
	}
	return out, nil
}

// haloRun times iters solver iterations on a fresh Cart with name, an
// implementation or a selector.
func haloRun(ctx context.Context, c *commtune.Comm, dims, ext []int, u, v []float64, name string, iters int) (HaloRun, error) {
	cart, err := c.Cart(dims, []bool{false, false, false})
	if err != nil {
		return HaloRun{}, err
	}
	opt := commtune.WithHaloImpl(name)
	if slices.Contains(commtune.HaloSelectors(), name) {
		opt = commtune.WithHaloSelect(name)
	}
	clear(u)
	clear(v)
	hu, err := commtune.NewHalo(cart, u, ext, 1, 1, opt)
	if err != nil {
		return HaloRun{}, err
	}
	hv, err := commtune.NewHalo(cart, v, ext, 1, 1, opt)
	if err != nil {
		return HaloRun{}, err
	}
	// A selector judges what the table measures: a whole iteration, the
	// stencil included (ADCL_Timer).
	timer, err := commtune.NewHaloTimer(hu, hv)
	if err != nil {
		return HaloRun{}, err
	}
	if err := c.Barrier(ctx); err != nil {
		return HaloRun{}, err
	}
	start := time.Now()
	cur, next, hcur, hnext := u, v, hu, hv
	for range iters {
		timer.Start()
		if err := hcur.Exchange(ctx); err != nil {
			return HaloRun{}, err
		}
		stencil(ext, cur, next)
		if err := timer.Stop(ctx); err != nil {
			return HaloRun{}, err
		}
		cur, next, hcur, hnext = next, cur, hnext, hcur
	}
	t := []float64{time.Since(start).Seconds()}
	if err := commtune.Allreduce(ctx, c, t, t, commtune.Max); err != nil {
		return HaloRun{}, err
	}
	r := HaloRun{Name: name, Seconds: t[0]}
	if s := hu.Selection(); s.Method != "fixed" {
		r.Choice, r.Calls, r.Selections = s.Impl, s.Calls, s.Selections
	}
	return r, nil
}

// stencil writes the 7-point average of cur's interior into next's: the
// solver's computation, seed 003's matrix-vector product.
func stencil(ext []int, cur, next []float64) {
	sz := ext[2] + 2
	sy := (ext[1] + 2) * sz
	for i := 1; i <= ext[0]; i++ {
		for j := 1; j <= ext[1]; j++ {
			row := i*sy + j*sz
			for p := row + 1; p <= row+ext[2]; p++ {
				next[p] = (cur[p-sy] + cur[p+sy] + cur[p-sz] + cur[p+sz] + cur[p-1] + cur[p+1]) / 6
			}
		}
	}
}

// HaloSummary is the report's table: each name's median over repeats.
type HaloSummary struct {
	Name    string
	Median  float64
	Runs    int
	Choices []string // a selector's choice in each repeat
	Calls   []int    // its calls in each repeat
	Selects []int    // its selections in each repeat
}

// Summarize groups the runs by name, in first-run order.
func (r *HaloReport) Summarize() []HaloSummary {
	var out []HaloSummary
	idx := map[string]int{}
	times := map[string][]float64{}
	for _, run := range r.Runs {
		i, ok := idx[run.Name]
		if !ok {
			i = len(out)
			idx[run.Name] = i
			out = append(out, HaloSummary{Name: run.Name})
		}
		times[run.Name] = append(times[run.Name], run.Seconds)
		if run.Choice != "" {
			out[i].Choices = append(out[i].Choices, run.Choice)
			out[i].Calls = append(out[i].Calls, run.Calls)
			out[i].Selects = append(out[i].Selects, run.Selections)
		}
	}
	for i := range out {
		ts := times[out[i].Name]
		out[i].Median, out[i].Runs = stats.Median(ts), len(ts)
	}
	return out
}

// WriteText prints the table of seed 003's figures: each implementation's
// median time, then each selector's, with how its choices compare with
// the best implementation of the table.
func (r *HaloReport) WriteText(w io.Writer) error {
	sum := r.Summarize()
	best := ""
	bestT := math.Inf(1)
	fixed := map[string]float64{}
	for _, s := range sum {
		if s.Choices == nil && !slices.Contains(commtune.HaloSelectors(), s.Name) {
			fixed[s.Name] = s.Median
			if s.Median < bestT {
				best, bestT = s.Name, s.Median
			}
		}
	}
	fmt.Fprintf(w, "halo exchange + 7-point stencil, %d ranks as %s blocks of %dx%dx%d points, %d iterations, %s; median of %d runs\n",
		r.Ranks, joinDims(r.Dims), r.Grid[0], r.Grid[1], r.Grid[2], r.Iters, r.Transport, max(len(r.Runs)/max(len(sum), 1), 1))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "run\tseconds\tvs best\tchoice (vs best) per run\tcalls per run\t")
	for _, s := range sum {
		vs := "-"
		if bestT > 0 && !math.IsInf(bestT, 1) {
			vs = fmt.Sprintf("%.3f", s.Median/bestT)
		}
		var choices, calls []string
		for i, ch := range s.Choices {
			if t, ok := fixed[ch]; ok && bestT > 0 {
				choices = append(choices, fmt.Sprintf("%s (%.3f)", ch, t/bestT))
			} else {
				choices = append(choices, ch)
			}
			c := fmt.Sprint(s.Calls[i])
			if s.Selects[i] != 1 {
				c += fmt.Sprintf(" (%d selections)", s.Selects[i])
			}
			calls = append(calls, c)
		}
		mark := ""
		if s.Name == best {
			mark = " *"
		}
		fmt.Fprintf(tw, "%s%s\t%.4f\t%s\t%s\t%s\t\n", s.Name, mark, s.Median, vs, strings.Join(choices, ", "), strings.Join(calls, ","))
	}
	return tw.Flush()
}

func joinDims(d []int) string {
	s := make([]string, len(d))
	for i, x := range d {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, "x")
}
