package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/commtune/commtune/internal/bench"
	"github.com/commtune/commtune/internal/plot"
	"github.com/commtune/commtune/internal/units"
)

// plotConvergence draws one convergence figure per size of the lottery
// report in path ("-": standard input) into dir.
func plotConvergence(path, dir string) int {
	var data []byte
	var err error
	if path == "-" {
		data, err = io.ReadAll(os.Stdin)
	} else {
		data, err = os.ReadFile(path)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "commtune plot: %v\n", err)
		return 1
	}
	var rep bench.LotteryReport
	if err := json.Unmarshal(data, &rep); err != nil || rep.Bench != "coll-lottery" && rep.Bench != "coll-learn" {
		fmt.Fprintf(os.Stderr, "commtune plot: %s is not the JSON of `commtune bench coll --algo lottery --json` or `--algo learn --json`\n", path)
		return 1
	}
	sel := cmp.Or(rep.Select, bench.Lottery)
	if len(rep.Runs) == 0 {
		fmt.Fprintf(os.Stderr, "commtune plot: %s holds no runs: nothing to plot\n", path)
		return 1
	}
	code := 0
	for _, run := range rep.Runs {
		c := plot.Convergence{
			Name: fmt.Sprintf("convergence-%s-%d-%s-%d", rep.Op, rep.Ranks, rep.Transport, run.Bytes),
			Title: fmt.Sprintf("%s: %s %s, %d ranks over %s (mean %.1f µs)", sel, rep.Op, units.FormatSize(int64(run.Bytes)),
				rep.Ranks, rep.Transport, run.MeanUS),
			Fixed: map[string]float64{},
		}
		drawn := map[string]bool{}
		for _, k := range run.Calls {
			c.Calls = append(c.Calls, plot.Call{TimeUS: k.TimeUS, Impl: k.Algo})
			drawn[k.Algo] = true
		}
		var fastest bench.FixedResult
		for i, f := range run.Fixed {
			if i == 0 || f.MeanUS < fastest.MeanUS {
				fastest = f
			}
		}
		for _, f := range run.Fixed {
			// Against every algorithm (learn), the lines of those drawn
			// and of the fastest: thirty would hide the calls.
			if drawn[f.Algo] || f.Algo == fastest.Algo {
				c.Fixed[f.Algo] = f.MeanUS
			}
		}
		files, err := plot.WriteConvergence(dir, c)
		for _, f := range files {
			fmt.Printf("%s  %d bytes\n", f.Path, f.Size)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "commtune plot: %v\n", err)
			code = 1
		}
	}
	return code
}
