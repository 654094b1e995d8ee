package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/commtune/commtune/internal/trace"
	"github.com/commtune/commtune/internal/tracereport"
)

func init() {
	register(command{name: "report", summary: "where a traced job's time went (COMMTUNE_TRACE): per operation and call site, as mpiP reports; --plot draws the timeline", run: reportMain})
}

// reportMain is `commtune report DIR|FILE [--sites] [--plot [--format
// png|svg] [--out DIR]] [--job ID]`.
func reportMain(args []string) int {
	fs := newFlagSet("report", "DIR|FILE [--sites] [--plot [--format png|svg] [--out DIR]] [--job ID]")
	sites := fs.Bool("sites", false, "add the time per operation and call site")
	plotFlag := fs.Bool("plot", false, "draw figures: the timeline with a lane per rank, the time per operation\n"+
		"per rank, and the algorithm each call took over time")
	format := fs.String("format", "png", "the figures' image format, `png|svg`")
	out := fs.String("out", "", "write the figures into `DIR`, created if needed (default: beside the trace)")
	job := fs.String("job", "", "report on job `ID`, when the directory holds several jobs' traces")
	pos, code, ok := parseInterspersed(fs, args)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		return usageError("report", "want one trace: the directory the job traced into (COMMTUNE_TRACE), or a trace file (got %d arguments)", len(pos))
	}
	if !*plotFlag {
		set := false
		fs.Visit(func(f *flag.Flag) { set = set || f.Name == "format" || f.Name == "out" })
		if set {
			return usageError("report", "--format and --out apply to the figures: add --plot")
		}
	}
	if *format != "png" && *format != "svg" {
		return usageError("report", "--format %q: want png or svg", *format)
	}
	path := pos[0]
	j, err := trace.ReadJob(path, *job)
	if err != nil {
		fmt.Fprintf(os.Stderr, "commtune report: %v\n", withJobHint(err))
		return 1
	}
	r := tracereport.Summarize(j, *sites)
	if err := tracereport.WriteTable(os.Stdout, r); err != nil {
		fmt.Fprintf(os.Stderr, "commtune report: %v\n", err)
		return 1
	}
	if !*plotFlag {
		return 0
	}
	dir := *out
	if dir == "" {
		dir = path
		if fi, err := os.Stat(path); err == nil && !fi.IsDir() {
			dir = filepath.Dir(path)
		}
	}
	files, err := tracereport.Plot(j, r, dir, *format)
	if len(files) > 0 {
		fmt.Println()
	}
	for _, f := range files {
		fmt.Println(f)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "commtune report: %v\n", err)
		return 1
	}
	return 0
}
