package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/commtune/commtune"
	"github.com/commtune/commtune/internal/config"
	"github.com/commtune/commtune/internal/control"
	"github.com/commtune/commtune/internal/demo"
	"github.com/commtune/commtune/internal/job"
	"github.com/commtune/commtune/internal/launch"
	"github.com/commtune/commtune/internal/profile"
	"github.com/commtune/commtune/internal/units"
)

func init() {
	register(command{name: "demo", summary: "sample this machine if needed, show what it tunes, and run a parallel program tuned and untuned", run: demoMain})
	register(command{name: "demo-rank", summary: "one rank of the demo program (started by demo)", run: demoRankMain, hidden: true})
}

// demoRanks is the demo program's size: one rank per processor, 2 to 4
// (an even number). With more ranks than processors every wait hands the
// processor over, and the times would measure the kernel's scheduler
// rather than the transfer paths the profile chose between.
func demoRanks() int {
	return min(max(runtime.NumCPU(), 2), 4) &^ 1
}

// demoMain is `commtune demo`.
func demoMain(args []string) int {
	fs := newFlagSet("demo", "[--resample] [--rounds N]")
	resample := fs.Bool("resample", false, "run the quick sampling pass even if this machine has a profile")
	rounds := fs.Int("rounds", 5, "runs of each configuration (tuned, defaults), taken in turns")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() > 0 {
		return usageError("demo", "unexpected argument %q", fs.Arg(0))
	}
	if *rounds < 1 {
		return usageError("demo", "--rounds must be at least 1")
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := runDemo(ctx, os.Stdout, os.Stderr, *resample, *rounds); err != nil {
		if ctx.Err() != nil {
			fmt.Fprintln(os.Stderr, "commtune demo: interrupted")
			return 130
		}
		fmt.Fprintf(os.Stderr, "commtune demo: %v\n", err)
		return 1
	}
	return 0
}

func runDemo(ctx context.Context, w, status io.Writer, resample bool, rounds int) error {
	start := time.Now()
	fp, path, err := config.Platform()
	if err != nil {
		return err
	}
	if path == commtune.ProfileOff {
		// The demo compares a profile with the defaults: keep its own.
		path = filepath.Join(os.TempDir(), "commtune-demo-"+fp.ID+".json")
	}
	p, err := profile.Load(path, fp)
	switch {
	case err == nil && !resample:
		fmt.Fprintf(w, "Using the profile of this machine, %s (sampled %s).\n\n", path, p.Created.Local().Format("2006-01-02 15:04"))
	default:
		why := "no profile for this machine yet"
		if err != nil && !profile.IsMissing(err) {
			why = err.Error()
		} else if err == nil {
			why = "--resample"
		}
		if p, err = sampleForDemo(ctx, w, status, fp, path, why); err != nil {
			return err
		}
	}
	ranks := demoRanks()
	var tuned, untuned [][]demo.Result
	var offState roundPairs // the last attempt's rounds set aside
	for attempt := 0; ; attempt++ {
		fmt.Fprintln(w, "What it selects, by message size, and why:")
		if err := writeSelection(w, p); err != nil {
			return err
		}
		cfg := demoConfig(p)
		fmt.Fprintf(w, "\nRunning a %d-rank program (ping-pong between ranks 0 and 1, then ring allreduces of float64 sums) over shared memory,\n", ranks)
		fmt.Fprintf(w, "tuned by the profile, then again on the built-in defaults: %d ranks for this machine's %d processors, as more\n", ranks, runtime.NumCPU())
		fmt.Fprintln(w, "ranks than processors would time the kernel's scheduling rather than the transfer paths...")
		var aside []float64
		tuned, untuned, aside, offState, err = demoRounds(ctx, status, ranks, cfg, path, rounds, p)
		if err != nil {
			return err
		}
		if len(aside) > 0 {
			fmt.Fprintf(w, "%d round(s) set aside: messages between the ranks ran %s times as fast as when the machine was sampled\n"+
				"(a %s ping-pong of %s, against the profile's own curve: the shared host in another state, where the\n"+
				"methods rank otherwise); the profile describes the state it was sampled in.\n",
				len(aside), driftList(aside), demo.ProbePath, units.FormatSize(demo.ProbeSize))
		}
		if len(tuned) >= rounds || attempt > 0 {
			break
		}
		// The machine stayed in another state than the profile's for most
		// of the rounds: sample it as it is now.
		if p, err = sampleForDemo(ctx, w, status, fp, path, "the machine is not in the state it was sampled in"); err != nil {
			return err
		}
	}
	if len(tuned) == 0 {
		// The machine did not return to the state it was sampled in, even
		// after sampling it again (a loaded or unsteady host). Each round
		// still compares tuned and defaults side by side, in one state:
		// compare them, and say the predictions describe another one.
		tuned, untuned = offState.tuned, offState.untuned
		fmt.Fprintf(w, "No round ran in the state the machine was sampled in, even after sampling it again: comparing the %d\n"+
			"rounds that ran, each tuned beside defaults in one state; the predictions describe the sampled state.\n", len(tuned))
	}
	fmt.Fprintln(w)
	v, err := demo.Compare(tuned, untuned)
	if err != nil {
		return err
	}
	if err := writeDemoTable(w, v, len(tuned), p, ranks); err != nil {
		return err
	}
	dcfg := demoConfig(p) // the profile the rounds kept
	if v.Faster > 0 {
		if err := confirmFaster(ctx, w, status, ranks, dcfg, path, p, v); err != nil {
			return err
		}
	}
	if err := demoLearned(ctx, w, status, ranks, path, dcfg.Table); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nDone in %.1f s. `commtune info` shows this again; `commtune bench sweep` holds the profile against fixed thresholds.\n",
		time.Since(start).Seconds())
	if len(v.Lost) > 0 {
		return lostError(v, p, ranks)
	}
	return nil
}

// sampleForDemo runs the quick pass over what the demo uses, shared
// memory and the collectives of its own number of ranks, and writes the
// profile to path. TCP and the other node sizes are left to `commtune
// sample`: jobs take the defaults where a profile has no samples.
func sampleForDemo(ctx context.Context, w, status io.Writer, fp profile.Fingerprint, path, why string) (*profile.Profile, error) {
	ranks := demoRanks()
	fmt.Fprintf(w, "Sampling this machine (%s): a quick pass over every transfer method of shared memory and the\n"+
		"collectives of %d ranks, what the demo runs; `commtune sample` adds TCP and the other sizes.\n", why, ranks)
	p, err := runSampling(ctx, status, []string{"shm"}, true, fp, []int{ranks})
	if err != nil {
		return nil, fmt.Errorf("sampling: %w", err)
	}
	if err := p.Save(path); err != nil {
		return nil, err
	}
	fmt.Fprintf(w, "Profile written to %s (%.1f s).\n\n", path, p.Seconds)
	return p, nil
}

// confirmRounds is how many paired rounds a rerun takes to confirm where
// tuned was faster beyond noise.
const confirmRounds = 3

// confirmFaster reruns the program tuned and on the defaults, in turns,
// and says for each operation where tuned was faster beyond noise whether
// the rerun's paired ratio agrees: a win the rerun does not repeat was
// noise, and the line says so.
func confirmFaster(ctx context.Context, w, status io.Writer, ranks int, cfg demo.Config, path string, p *profile.Profile, v *demo.Verdict) error {
	tuned, untuned, _, off, err := demoRounds(ctx, status, ranks, cfg, path, confirmRounds, p)
	if err != nil {
		return err
	}
	state := ""
	if len(tuned) == 0 {
		tuned, untuned, state = off.tuned, off.untuned, ", none in the sampled state"
	}
	again, err := demo.Compare(tuned, untuned)
	if err != nil {
		return err
	}
	var held, gone []string
	for i, c := range v.Rows {
		if c.SamePath() || c.Ratio <= 1+v.Noise {
			continue
		}
		what := fmt.Sprintf("%s %s (%.2fx, then %.2fx)", c.Tuned.Op, units.FormatSize(c.Tuned.Bytes), c.Ratio, again.Rows[i].Ratio)
		if again.Rows[i].Ratio > 1 {
			held = append(held, what)
		} else {
			gone = append(gone, what)
		}
	}
	fmt.Fprintf(w, "A paired rerun (%d more rounds%s) confirms tuned faster on %d of %d", len(tuned), state, len(held), len(held)+len(gone))
	if len(held) > 0 {
		fmt.Fprintf(w, ": %s", strings.Join(held, ", "))
	}
	if len(gone) > 0 {
		fmt.Fprintf(w, "; not on %s, noise after all", strings.Join(gone, ", "))
	}
	fmt.Fprintln(w, ".")
	return nil
}

// roundPairs is rounds of the program, each run tuned and on the defaults.
type roundPairs struct{ tuned, untuned [][]demo.Result }

// demoRounds runs the program on the profile at profilePath and on the
// defaults, taking turns, until rounds rounds ran in the state p was
// sampled in (demo.InState), or twice as many were run. The two
// configurations alternate so that the machine's drift falls on both
// alike. It returns the rounds kept and, for each round set aside, how far
// the machine had drifted from p's state (demo.Drift) and the round itself.
func demoRounds(ctx context.Context, status io.Writer, ranks int, cfg demo.Config, profilePath string, rounds int, p *profile.Profile) (tuned, untuned [][]demo.Result, aside []float64, off roundPairs, err error) {
	ref, haveRef := demo.Reference(p, "shm")
	for r := 0; len(tuned) < rounds && r < 2*rounds; r++ {
		t, err := demoJob(ctx, ranks, cfg, profilePath)
		if err != nil {
			return nil, nil, nil, off, fmt.Errorf("tuned run: %w", err)
		}
		u, err := demoJob(ctx, ranks, cfg, commtune.ProfileOff)
		if err != nil {
			return nil, nil, nil, off, fmt.Errorf("untuned run: %w", err)
		}
		if haveRef && !demo.InState(t.Probe, u.Probe, ref) {
			d := max(demo.Drift(t.Probe, ref), demo.Drift(u.Probe, ref))
			if max(t.Probe, u.Probe) < ref {
				d = 1 / d
			}
			aside = append(aside, d)
			off.tuned, off.untuned = append(off.tuned, t.Results), append(off.untuned, u.Results)
			fmt.Fprintf(status, "  round %d set aside: messages between the ranks ran at %.2f of the sampled speed\n", r+1, 1/d)
			continue
		}
		tuned, untuned = append(tuned, t.Results), append(untuned, u.Results)
		fmt.Fprintf(status, "  round %d of %d done\n", len(tuned), rounds)
	}
	return tuned, untuned, aside, off, nil
}

// driftList formats how fast each set-aside round ran against the sampled
// state: "0.20, 0.15".
func driftList(aside []float64) string {
	var b strings.Builder
	for i, d := range aside {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%.2f", 1/d)
	}
	return b.String()
}

// demoConfig picks sizes on both sides of the shared-memory thresholds a
// job here takes from p (and a few fixed ones, so the defaults' thresholds are
// crossed too), and allreduce sizes from small to large.
func demoConfig(p *profile.Profile) demo.Config {
	sizes := []int64{8, 4 << 10, 32 << 10, 1 << 20, 8 << 20}
	if plan, err := job.PlanFor(p, "shm"); err == nil {
		r := int64(plan.Policy.Rendezvous)
		sizes = append(sizes, r/2, r, 2*r)
		for _, l := range plan.Policy.Large {
			if from := int64(l.Min); from > r+1 {
				sizes = append(sizes, from/2, 2*from)
			}
		}
	}
	sizes = slices.DeleteFunc(sizes, func(n int64) bool { return n < 1 || n > 16<<20 })
	slices.Sort(sizes)
	return demo.Config{PingPong: slices.Compact(sizes), Allreduce: []int64{8 << 10, 256 << 10, 4 << 20}, Table: []int64{1 << 10, 64 << 10, 1 << 20}}
}

// demoJob runs the program through the launcher with COMMTUNE_PROFILE set
// to profilePath and returns rank 0's report.
func demoJob(ctx context.Context, ranks int, cfg demo.Config, profilePath string) (*demo.Report, error) {
	join := func(v []int64) string {
		s := make([]string, len(v))
		for i, n := range v {
			s[i] = strconv.FormatInt(n, 10)
		}
		return strings.Join(s, ",")
	}
	argv, err := launch.Self("demo-rank", "--pingpong", join(cfg.PingPong), "--allreduce", join(cfg.Allreduce), "--table", join(cfg.Table))
	if err != nil {
		return nil, err
	}
	var out, stderr strings.Builder
	// The table rows compare the two decision tables: the selection
	// learning in the running program has a part of its own (demoLearned).
	env := []string{commtune.EnvProfile + "=" + profilePath, commtune.EnvCollSelect + "=" + commtune.CollSelectTable}
	if err := launch.Run(ctx, launch.Options{N: ranks, Args: argv, Env: env, Stdout: &out, Stderr: &stderr}); err != nil {
		return nil, fmt.Errorf("%w\n%s", err, strings.TrimSpace(stderr.String()))
	}
	var rep demo.Report
	if err := json.Unmarshal([]byte(out.String()), &rep); err != nil {
		return nil, fmt.Errorf("reading rank 0's results: %w", err)
	}
	return &rep, nil
}

// writeDemoTable prints the two configurations side by side, each with
// its mean, median and 99th percentile, with the way each sends the
// messages of every operation, what the profile predicted for each (a
// median), and their ratios where those ways differ (elsewhere the ratio is
// noise: it feeds the verdict's noise level).
func writeDemoTable(w io.Writer, v *demo.Verdict, rounds int, p *profile.Profile, ranks int) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "operation\tsize\ttuned mean\tp50\tp99\tpredicted\tdefaults mean\tp50\tp99\tpredicted\tdefaults/tuned mean\tp50\ttuned path\tdefaults path\t\n")
	var predicted, within int
	worst, worstAt := 0.0, ""
	pred := func(r demo.Result) string {
		d, ok := demo.Predict(p, "shm", ranks, r)
		if !ok {
			return "-"
		}
		predicted++
		miss := demo.Miss(d, r.NS)
		if miss <= predictionTolerance {
			within++
		}
		if miss > worst {
			worst, worstAt = miss, fmt.Sprintf("%s %s on %s: %.2f µs predicted, %.2f measured", r.Op, units.FormatSize(r.Bytes), r.Path, float64(d)/1e3, r.NS/1e3)
		}
		return fmt.Sprintf("%.2f", float64(d)/1e3)
	}
	for _, c := range v.Rows {
		meanRatio, ratio, up := fmt.Sprintf("%.2f", c.MeanRatio), fmt.Sprintf("%.2f", c.Ratio), c.Defaults.Path
		if c.SamePath() {
			meanRatio, ratio, up = "", "", "same"
		}
		fmt.Fprintf(tw, "%s\t%s\t%.2f\t%.2f\t%.2f\t%s\t%.2f\t%.2f\t%.2f\t%s\t%s\t%s\t%s\t%s\t\n", c.Tuned.Op, units.FormatSize(c.Tuned.Bytes),
			c.Tuned.MeanNS/1e3, c.Tuned.NS/1e3, c.Tuned.P99NS/1e3, pred(c.Tuned),
			c.Defaults.MeanNS/1e3, c.Defaults.NS/1e3, c.Defaults.P99NS/1e3, pred(c.Defaults), meanRatio, ratio, c.Tuned.Path, up)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	leftOut := 0
	for _, c := range v.Rows {
		leftOut += c.LeftOut
	}
	_, err := fmt.Fprintf(w, "(µs; ping-pong: one-way time; allreduce: the whole operation; the path is how each\n"+
		"message, or allreduce chunk, is sent; (table): calls back to back whose algorithm the decision table chose,\n"+
		"the sampled table under the profile, the fixed one on the defaults, the path naming it; %d runs each, taken\n"+
		"in turns, leaving out runs whose median is more than %.1f times the operation's fastest, which other work slowed\n"+
		"(%d of %d here), as the sampling pass leaves out such blocks; mean: over the runs' repetitions; p50 and p99: medians of the runs'; predicted: a median, by the\n"+
		"profile's curve of that path, for ping-pong, and of the allreduce over it, for allreduce. The verdict below\n"+
		"compares the p50s, as the profile's curves are medians.\n"+
		"Noise: where both took the same path their runs' p50s differed by up to %.0f%%.)\n"+
		"Predictions within %.0f%% of the measured time: %d of %d (the farthest %.0f%% off: %s).\n"+
		"Where the profile chose differently from the defaults (%d of %d operations), tuned was faster beyond noise on %d\n"+
		"and slower beyond noise on %d.\n",
		rounds, demo.SlowRun, leftOut, 2*rounds*len(v.Rows), 100*v.Noise, 100*predictionTolerance, within, predicted, 100*worst, worstAt,
		v.Differ, len(v.Rows), v.Faster, len(v.Lost))
	return err
}

// predictionTolerance is how far from the measured time the demo counts a
// prediction as right: the noise of one run here is 5–20%.
const predictionTolerance = 0.25

// lostError says which operations tuned lost and why it chose as it did:
// the sampling pass's prediction for both paths, against this run.
func lostError(v *demo.Verdict, p *profile.Profile, ranks int) error {
	var b strings.Builder
	fmt.Fprintf(&b, "tuned was slower beyond noise on %d operation(s):", len(v.Lost))
	for _, c := range v.Lost {
		fmt.Fprintf(&b, "\n  %s %s: %.2f µs on %s against %.2f µs on %s (slower in %d of %d runs)",
			c.Tuned.Op, units.FormatSize(c.Tuned.Bytes), c.Tuned.NS/1e3, c.Tuned.Path, c.Defaults.NS/1e3, c.Defaults.Path, c.SlowerRuns, len(c.Ratios))
		tp, tok := demo.Predict(p, "shm", ranks, c.Tuned)
		dp, dok := demo.Predict(p, "shm", ranks, c.Defaults)
		switch {
		case !tok || !dok:
		case tp <= dp:
			fmt.Fprintf(&b, ";\n    the profile predicted %s on %s and %s on %s: it is off at this size now",
				tp.Round(10*time.Nanosecond), c.Tuned.Path, dp.Round(10*time.Nanosecond), c.Defaults.Path)
		case c.Tuned.Op == "pingpong":
			noise := profile.Noise(p.Curve("shm", c.Tuned.Path), p.Curve("shm", c.Defaults.Path), c.Tuned.Bytes)
			fmt.Fprintf(&b, ";\n    the profile itself predicted %s %.1f%% faster, within the noise of its points there (%.1f%%), so it kept %s",
				c.Defaults.Path, 100*(float64(tp)/float64(dp)-1), 100*noise/float64(dp), c.Tuned.Path)
		default:
			fmt.Fprintf(&b, ";\n    the profile's %s curves predicted %s %.1f%% faster, but its thresholds follow the ping-pong curves, which chose %s",
				c.Tuned.Op, c.Defaults.Path, 100*(float64(tp)/float64(dp)-1), c.Tuned.Path)
		}
	}
	b.WriteString("\nA profile sampled under other load, or with --quick, can be wrong here: `commtune demo --resample` samples again.")
	return errors.New(b.String())
}

// demoRankMain is one rank of the demo program.
func demoRankMain(args []string) int {
	fs := newFlagSet("demo-rank", "--pingpong SIZES --allreduce SIZES --table SIZES")
	pp := fs.String("pingpong", "", "ping-pong sizes in bytes")
	ar := fs.String("allreduce", "", "allreduce sizes in bytes")
	tb := fs.String("table", "", "sizes in bytes of the collectives the decision table chooses for")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	var cfg demo.Config
	for _, f := range []struct {
		s   string
		dst *[]int64
	}{{*pp, &cfg.PingPong}, {*ar, &cfg.Allreduce}, {*tb, &cfg.Table}} {
		sizes, err := units.ParseSizes(f.s)
		if err != nil {
			return usageError("demo-rank", "%v", err)
		}
		*f.dst = sizes
	}
	return runRank(func(ctx context.Context, c *commtune.Comm, ep control.Endpoint) (any, error) {
		res, err := demo.Run(ctx, c, ep, cfg)
		if c.Rank() != 0 {
			return nil, err
		}
		return res, err
	})
}
