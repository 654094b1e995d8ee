package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/commtune/commtune"
	"github.com/commtune/commtune/internal/config"
	"github.com/commtune/commtune/internal/control"
	"github.com/commtune/commtune/internal/launch"
	"github.com/commtune/commtune/internal/profile"
	"github.com/commtune/commtune/internal/sample"
)

func init() {
	register(command{name: "sample", summary: "measure every transfer method of this machine and write its tuning profile", run: sampleMain})
	register(command{name: "sample-rank", summary: "one rank of a sampling pass (started by sample)", run: sampleRankMain, hidden: true})
	register(command{name: "sample-node-rank", summary: "one rank of a node pass (started by sample)", run: sampleNodeRankMain, hidden: true})
}

// sampleTransports are the transports a pass can sample, in order.
var sampleTransports = []string{"shm", "tcp"}

// sampleMain is `commtune sample [--transports shm,tcp] [--quick] [--out
// FILE]`, or with --in-job one of the two ranks of a pass that a launcher
// started (on two nodes).
func sampleMain(args []string) int {
	fs := newFlagSet("sample", "[--transports shm,tcp] [--quick] [--out FILE] [--in-job]")
	transports := fs.String("transports", strings.Join(sampleTransports, ","), "transports to sample, comma-separated")
	quick := fs.Bool("quick", false, "a shorter pass: powers of two only, fewer repetitions")
	out := fs.String("out", "", "write the profile to `FILE` (default: where commtune looks for it, $COMMTUNE_PROFILE or the cache directory)")
	inJob := fs.Bool("in-job", false, "be one of the two ranks of a job another launcher started (mpiexec -n 2 on two nodes): sample the transport and every rail between them; rank 0 merges the curves into the profile")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() > 0 {
		return usageError("sample", "unexpected argument %q", fs.Arg(0))
	}
	if *inJob {
		return sampleInJob(*quick, *out)
	}
	var ts []string
	for _, t := range strings.Split(*transports, ",") {
		t = strings.TrimSpace(t)
		if !slices.Contains(sampleTransports, t) {
			return usageError("sample", "--transports: %q is not one of %s", t, strings.Join(sampleTransports, ", "))
		}
		if !slices.Contains(ts, t) {
			ts = append(ts, t)
		}
	}
	fp, path, err := config.Platform()
	if err != nil {
		fmt.Fprintf(os.Stderr, "commtune sample: %v\n", err)
		return 1
	}
	if *out != "" {
		path = *out
	}
	if path == commtune.ProfileOff {
		return usageError("sample", "%s=off: give --out FILE to say where the profile goes", commtune.EnvProfile)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	p, err := runSampling(ctx, os.Stderr, ts, *quick, fp, nodeCounts(runtime.NumCPU()))
	if err != nil {
		if ctx.Err() != nil {
			fmt.Fprintln(os.Stderr, "commtune sample: interrupted; no profile written")
			return 130
		}
		fmt.Fprintf(os.Stderr, "commtune sample: %v; no profile written\n", err)
		return 1
	}
	if err := p.Save(path); err != nil {
		fmt.Fprintf(os.Stderr, "commtune sample: %v\n", err)
		return 1
	}
	fmt.Printf("profile written to %s (sampled in %.1f s)\n\n", path, p.Seconds)
	if err := writeSelection(os.Stdout, p); err != nil {
		fmt.Fprintf(os.Stderr, "commtune sample: %v\n", err)
		return 1
	}
	return 0
}

// runSampling runs one two-rank job per transport and times plain copies,
// showing progress on w, and returns the profile.
func runSampling(ctx context.Context, w io.Writer, transports []string, quick bool, fp profile.Fingerprint, counts []int) (*profile.Profile, error) {
	start := time.Now()
	plan := sample.NewPlan(quick)
	per := plan.Units()
	if !slices.Contains(transports, "shm") {
		counts = nil
	}
	node := sample.NodeUnits(quick) + sample.TableUnits(quick)
	bar := newBar(w, "sampling", per*len(transports)+node*len(counts)+1)
	defer bar.Finish()
	p := &profile.Profile{Version: profile.Version, Fingerprint: fp, Created: start.UTC().Round(time.Second),
		Quick: quick, Transports: map[string]*profile.Transport{}}
	for i, t := range transports {
		if err := sampleTransport(ctx, t, quick, func(r sample.Report) {
			if r.Result != nil {
				p.Transports[t] = r.Result
				return
			}
			bar.Describe(r.What)
			bar.Set(i*per + r.Done)
		}); err != nil {
			return nil, fmt.Errorf("sampling %s: %w", t, err)
		}
		if p.Transports[t] == nil {
			return nil, fmt.Errorf("sampling %s: rank 0 reported no result", t)
		}
	}
	done := per * len(transports)
	bar.Describe("memcpy")
	p.Host = map[string]profile.Curve{profile.Memcpy: sample.Memcpy(plan)}
	bar.Set(done + 1)
	done++
	// The node passes run with what the transports' passes found, as
	// programs will: which messages go eagerly decides between whole and
	// pipelined collectives (at 64 KiB on 4 ranks, a table sampled on the
	// defaults chose 16 KiB segments that ran 1.2–1.4x slower under the
	// profile).
	p2p, err := os.CreateTemp("", "commtune-profile-*.json")
	if err != nil {
		return nil, err
	}
	p2p.Close()
	defer os.Remove(p2p.Name())
	if err := p.Save(p2p.Name()); err != nil {
		return nil, err
	}
	for i, n := range counts {
		curves, table, err := sampleNode(ctx, n, quick, p2p.Name(), func(r sample.Report) {
			bar.Describe(r.What)
			bar.Set(done + i*node + r.Done)
		})
		if err != nil {
			return nil, fmt.Errorf("sampling collectives of %d ranks: %w", n, err)
		}
		shm := p.Transports["shm"]
		if shm.Node == nil {
			shm.Node = map[string]map[string]profile.Curve{}
		}
		shm.Node[strconv.Itoa(n)], shm.NodeCPUs = curves, runtime.NumCPU()
		if shm.Coll == nil {
			shm.Coll = map[string]profile.CollTable{}
		}
		shm.Coll[strconv.Itoa(n)] = table
	}
	bar.Set(done + node*len(counts))
	p.Seconds = time.Since(start).Round(100 * time.Millisecond).Seconds()
	return p, nil
}

// sampleTransport runs the ranks of one pass over transport.
func sampleTransport(ctx context.Context, transport string, quick bool, fn func(sample.Report)) error {
	argv, err := launch.Self("sample-rank", fmt.Sprintf("--quick=%v", quick))
	if err != nil {
		return err
	}
	env := []string{commtune.EnvTransports + "=tcp"}
	if transport == "shm" {
		env = []string{commtune.EnvTransports + "=shm,tcp"}
	}
	// The pass measures the methods themselves, not an older profile's
	// choices among them.
	env = append(env, commtune.EnvProfile+"="+commtune.ProfileOff)
	return runPass(ctx, 2, argv, env, fn)
}

// runPass launches n ranks of argv with env over this node, handing each
// report rank 0 writes to fn; a failure carries what the ranks said on
// their standard error.
func runPass(ctx context.Context, n int, argv, env []string, fn func(sample.Report)) error {
	rr := sample.NewReportReader(fn)
	var stderr strings.Builder
	err := launch.Run(ctx, launch.Options{N: n, Args: argv, Env: env, Stdout: rr, Stderr: &stderr})
	if cerr := rr.Close(); err == nil {
		err = cerr
	}
	if err != nil && stderr.Len() > 0 {
		err = fmt.Errorf("%w\n%s", err, strings.TrimSpace(stderr.String()))
	}
	return err
}

// nodeCounts are the rank counts of the node passes on a node of cpus
// processors: as many ranks as processors (at least 2), and twice as many
// where that stays small, since the crossing of single copy moves when
// ranks outnumber processors.
func nodeCounts(cpus int) []int {
	var out []int
	if cpus >= 2 {
		out = append(out, min(cpus, maxNodeRanks))
	}
	if over := 2 * max(cpus, 1); over <= maxNodeRanks {
		out = append(out, over)
	}
	return out
}

// maxNodeRanks bounds a node pass: an Alltoall of 1 MiB blocks moves
// ranks² MiB a call.
const maxNodeRanks = 8

// sampleNode runs the node pass of n ranks over shared memory, tuned by
// the profile at p2p, and returns its curves and its collective table.
func sampleNode(ctx context.Context, n int, quick bool, p2p string, fn func(sample.Report)) (map[string]profile.Curve, profile.CollTable, error) {
	env := []string{commtune.EnvTransports + "=shm,tcp", commtune.EnvProfile + "=" + p2p}
	for attempt := 1; ; attempt++ {
		argv, err := launch.Self("sample-node-rank", fmt.Sprintf("--quick=%v", quick), fmt.Sprintf("--keep-slow=%v", attempt == slowAttempts))
		if err != nil {
			return nil, nil, err
		}
		var curves map[string]profile.Curve
		var table profile.CollTable
		var slow float64
		err = runPass(ctx, n, argv, env, func(r sample.Report) {
			switch {
			case r.Node != nil:
				curves, table, slow = r.Node, r.Coll, r.Slow
			case r.Slow > 0:
				slow = r.Slow
			default:
				fn(r)
			}
		})
		switch {
		case err != nil:
			return nil, nil, err
		case slow > 0 && attempt < slowAttempts:
			fmt.Fprintf(os.Stderr, "commtune sample: the node pass of %d ranks ran in a slow launch (a 1 MiB message took %.0fx a private copy); running it again\n", n, slow)
			continue
		case curves == nil || table == nil:
			return nil, nil, fmt.Errorf("rank 0 reported no result")
		case slow > 0:
			fmt.Fprintf(os.Stderr, "commtune sample: warning: %d launches in a row copied through shared memory %.0fx slower than within a process (or other work kept them from running); the collective table of %d ranks may rank algorithms by how they suffer from it (run `commtune sample` again later)\n", slowAttempts, slow, n)
		}
		return curves, table, nil
	}
}

// slowAttempts is how many launches a node pass gets to find one that is
// not slow (sample.SlowLaunchRatio).
const slowAttempts = 4

// sampleNodeRankMain is the hidden `commtune sample-node-rank`: one rank
// of a node pass.
func sampleNodeRankMain(args []string) int {
	var keepSlow *bool
	return passRank("sample-node-rank", args, func(ctx context.Context, c *commtune.Comm, _ control.Endpoint, quick bool, progress sample.Progress) (any, error) {
		// A slow launch ends the pass on every rank alike (all of them
		// read the same figure), and rank 0 reports it; the last attempt
		// runs on and reports its results too.
		var slow float64
		check := func() (stop bool, err error) {
			r, err := sample.LaunchRatio(ctx, c)
			if err != nil || r <= sample.SlowLaunchRatio {
				return err != nil, err
			}
			slow = max(slow, r)
			return !*keepSlow, nil
		}
		report := func() any {
			if c.Rank() != 0 {
				return nil
			}
			return sample.Report{Slow: slow}
		}
		if stop, err := check(); stop {
			return report(), err
		}
		curves, err := sample.NodeRun(ctx, c, quick, progress)
		if err != nil {
			return nil, err
		}
		base := sample.NodeUnits(quick)
		table, err := sample.TableRun(ctx, c, quick, func(done, total int, what string) {
			progress(base+done, base+total, what)
		})
		if err != nil {
			return nil, err
		}
		if stop, err := check(); stop {
			return report(), err
		}
		if c.Rank() != 0 {
			return nil, nil
		}
		return sample.Report{Node: curves, Coll: table, Slow: slow}, nil
	}, func(fs *flag.FlagSet) {
		keepSlow = fs.Bool("keep-slow", false, "report the results of a slow launch too (the last attempt)")
	})
}

// passRank runs one rank of a pass started by sample: --quick, progress
// as reports on standard output, then run's result.
func passRank(name string, args []string, run func(ctx context.Context, c *commtune.Comm, ep control.Endpoint, quick bool, progress sample.Progress) (any, error), flags ...func(*flag.FlagSet)) int {
	fs := newFlagSet(name, "[--quick]")
	quick := fs.Bool("quick", false, "a shorter pass")
	for _, f := range flags {
		f(fs)
	}
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	return runRank(func(ctx context.Context, c *commtune.Comm, ep control.Endpoint) (any, error) {
		progress := func(done, total int, what string) {
			sample.WriteReport(os.Stdout, sample.Report{Done: done, Total: total, What: what})
		}
		return run(ctx, c, ep, *quick, progress)
	})
}

// sampleRankMain is the hidden `commtune sample-rank`: one rank of a pass.
func sampleRankMain(args []string) int {
	return passRank("sample-rank", args, func(ctx context.Context, c *commtune.Comm, ep control.Endpoint, quick bool, progress sample.Progress) (any, error) {
		transport, tr, err := sample.Run(ctx, c, ep, sample.NewPlan(quick), progress)
		if c.Rank() != 0 || err != nil {
			return nil, err
		}
		return sample.Report{Transport: transport, Result: tr}, nil
	})
}

// sampleInJob is `commtune sample --in-job`: this process is one of the
// two ranks of a job; they sample the transport between them (tcp across
// nodes, with one curve per rail), and rank 0 puts the result into this
// platform's profile, keeping what it holds of other transports.
func sampleInJob(quick bool, out string) int {
	fp, path, err := config.Platform()
	if err != nil {
		fmt.Fprintf(os.Stderr, "commtune sample: %v\n", err)
		return 1
	}
	if out != "" {
		path = out
	}
	if path == commtune.ProfileOff {
		return usageError("sample", "%s=off: give --out FILE to say where the profile goes", commtune.EnvProfile)
	}
	return runRank(func(ctx context.Context, c *commtune.Comm, ep control.Endpoint) (any, error) {
		start := time.Now()
		plan := sample.NewPlan(quick)
		var progress sample.Progress
		if c.Rank() == 0 {
			bar := newBar(os.Stderr, "sampling", plan.Units())
			defer bar.Finish()
			progress = func(done, total int, what string) {
				bar.Describe(what)
				bar.Set(min(done, plan.Units()))
			}
		}
		transport, tr, err := sample.Run(ctx, c, ep, plan, progress)
		if c.Rank() != 0 || err != nil {
			return nil, err
		}
		p, err := profile.Load(path, fp)
		if err != nil {
			p = &profile.Profile{Version: profile.Version, Fingerprint: fp, Transports: map[string]*profile.Transport{},
				Host: map[string]profile.Curve{profile.Memcpy: sample.Memcpy(plan)}}
		}
		p.Transports[transport] = tr
		p.Created, p.Quick = start.UTC().Round(time.Second), quick
		p.Seconds = time.Since(start).Round(100 * time.Millisecond).Seconds()
		if err := p.Save(path); err != nil {
			return nil, err
		}
		fmt.Fprintf(os.Stderr, "%s curves (%d rails) written to %s\n", transport, max(len(tr.Rails), 1), path)
		return nil, nil
	})
}
