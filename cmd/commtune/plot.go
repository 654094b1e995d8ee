package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/commtune/commtune"
	"github.com/commtune/commtune/internal/config"
	"github.com/commtune/commtune/internal/plot"
	"github.com/commtune/commtune/internal/profile"
)

func init() {
	register(command{name: "plot", summary: "draw each threshold's two curves and their crossing (PNG and SVG)", run: plotMain})
}

// defaultPlotDir is where `commtune plot` writes without --out: a
// directory of the current one, so the figures land next to the user.
const defaultPlotDir = "commtune-plots"

// plotMain is `commtune plot [--out DIR] [--file FILE | --convergence
// FILE]`.
func plotMain(args []string) int {
	fs := newFlagSet("plot", "[--out DIR] [--file FILE | --convergence FILE]")
	out := fs.String("out", defaultPlotDir, "write the figures into `DIR`, created if needed")
	file := fs.String("file", "", "plot the profile in `FILE`, from this machine or another\n"+
		"(default: this machine's, where commtune sample wrote it: $COMMTUNE_PROFILE or the cache directory)")
	conv := fs.String("convergence", "", "draw the lottery's convergence from `FILE`, the JSON of\n"+
		"`commtune bench coll --algo lottery --json` (- for standard input): per call, its time\n"+
		"and the algorithm drawn, against each candidate's mean alone")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() > 0 {
		return usageError("plot", "unexpected argument %q", fs.Arg(0))
	}
	if *out == "" {
		return usageError("plot", "--out: empty directory name")
	}
	if *conv != "" {
		if *file != "" {
			return usageError("plot", "--file and --convergence draw different things: give one")
		}
		return plotConvergence(*conv, *out)
	}
	var p *profile.Profile
	var code int
	if *file != "" {
		p, code = readProfile(*file)
	} else {
		p, code = machineProfile()
	}
	if p == nil {
		return code
	}
	files, err := plot.Write(*out, p)
	for _, f := range files {
		fmt.Printf("%s  %d bytes\n", f.Path, f.Size)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "commtune plot: %v\n", err)
		return 1
	}
	if len(files) == 0 {
		fmt.Fprintln(os.Stderr, "commtune plot: the profile has no transports: nothing to plot")
		return 1
	}
	return 0
}

// readProfile reads the profile in path, whichever machine it describes:
// plotting another machine's profile (a cluster node's, a colleague's) is
// one of the reasons to plot at all. It returns nil and the exit status on
// failure, having said why.
func readProfile(path string) (*profile.Profile, int) {
	data, err := os.ReadFile(path)
	switch {
	case profile.IsMissing(err):
		fmt.Fprintf(os.Stderr, "commtune plot: no profile at %s (run `commtune sample --out %s` to measure this machine into it)\n", path, path)
		return nil, 1
	case err != nil:
		fmt.Fprintf(os.Stderr, "commtune plot: %v\n", err)
		return nil, 1
	}
	p, err := profile.Parse(data)
	if err != nil {
		fmt.Fprintf(os.Stderr, "commtune plot: profile %s: %v\n", path, err)
		return nil, 1
	}
	return p, 0
}

// machineProfile loads this machine's profile, from where the library
// looks for it. It returns nil and the exit status on failure, having said
// why and what to do.
func machineProfile() (*profile.Profile, int) {
	fp, path, err := config.Platform()
	if err != nil {
		fmt.Fprintf(os.Stderr, "commtune plot: %v\n", err)
		return nil, 1
	}
	if path == commtune.ProfileOff {
		return nil, usageError("plot", "%s=off: give --file FILE to say which profile to plot", commtune.EnvProfile)
	}
	p, err := profile.Load(path, fp)
	switch {
	case profile.IsMissing(err):
		fmt.Fprintf(os.Stderr, "commtune plot: no tuning profile for this machine at %s (run `commtune sample` to measure it)\n", path)
		return nil, 1
	case errors.Is(err, profile.ErrForeign):
		fmt.Fprintf(os.Stderr, "commtune plot: %v\n(run `commtune sample` to measure this machine again, or give --file %s to plot that profile anyway)\n", err, path)
		return nil, 1
	case errors.Is(err, profile.ErrInvalid):
		fmt.Fprintf(os.Stderr, "commtune plot: %v\n(run `commtune sample` to measure this machine again)\n", err)
		return nil, 1
	case err != nil:
		fmt.Fprintf(os.Stderr, "commtune plot: %v\n", err)
		return nil, 1
	}
	return p, 0
}
