package main

import (
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
	if err := json.Unmarshal(data, &rep); err != nil || rep.Bench != "coll-lottery" {
		fmt.Fprintf(os.Stderr, "commtune plot: %s is not the JSON of `commtune bench coll --algo lottery --json`\n", path)
		return 1
	}
	if len(rep.Runs) == 0 {
		fmt.Fprintf(os.Stderr, "commtune plot: %s holds no runs: nothing to plot\n", path)
		return 1
	}
	code := 0
	for _, run := range rep.Runs {
		c := plot.Convergence{
			Name: fmt.Sprintf("convergence-%s-%d-%s-%d", rep.Op, rep.Ranks, rep.Transport, run.Bytes),
			Title: fmt.Sprintf("lottery: %s %s, %d ranks over %s (mean %.1f µs)", rep.Op, units.FormatSize(int64(run.Bytes)),
				rep.Ranks, rep.Transport, run.MeanUS),
			Fixed: map[string]float64{},
		}
		for _, k := range run.Calls {
			c.Calls = append(c.Calls, plot.Call{TimeUS: k.TimeUS, Impl: k.Algo})
		}
		for _, f := range run.Fixed {
			c.Fixed[f.Algo] = f.MeanUS
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
