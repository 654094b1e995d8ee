package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"time"

	"github.com/commtune/commtune"
	"github.com/commtune/commtune/internal/bench"
	"github.com/commtune/commtune/internal/boot"
	"github.com/commtune/commtune/internal/control"
	"github.com/commtune/commtune/internal/launch"
	"github.com/commtune/commtune/internal/units"
)

// soakTransports are what --transport all runs, one after the other: the
// two that carry messages between processes.
var soakTransports = []string{"shm", "tcp"}

// soakSamples is how many samples a run gets at least when --every is
// not given: the verdict compares thirds of them, after a warm-up.
const soakSamples = 10

// soakMain is `commtune bench soak [-n 8] [--transport
// shm|tcp|inproc|all] [--duration 30m] [--every 1m] [--seed S]
// [--max-size 4M] [--json]`.
func soakMain(args []string) int {
	fs := newFlagSet("bench soak", "[-n 8] [--transport shm|tcp|inproc|all] [--duration 30m] [--every 1m] [--seed S] [--max-size 4M] [--heap-profiles DIR] [--json]")
	ranks := fs.Int("n", 8, "ranks")
	transport := fs.String("transport", "all", "shm (processes, shared memory), tcp (processes), inproc (goroutine ranks), or all (shm, then tcp)")
	duration := fs.Duration("duration", 30*time.Minute, "how long each transport runs")
	every := fs.Duration("every", time.Minute, fmt.Sprintf("how often the ranks sample (when not given and the run is short, a %dth of the duration, at least 1s)", soakSamples))
	seed := fs.Uint64("seed", 0, "seed of every step, size and payload (0: a random one, printed)")
	maxSizeFlag := fs.String("max-size", units.FormatSize(bench.SoakMaxSize), "largest message and collective vector")
	asJSON := fs.Bool("json", false, "print each transport's report (samples, verdict, payload errors) as one JSON object; progress goes to stderr")
	heapProfiles := fs.String("heap-profiles", "", "directory where each rank writes its heap profile at each sample (heap-rank-R-K.pb.gz), for go tool pprof -base")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if *ranks < 1 || *ranks > 1024 {
		return usageError("bench", "-n %d: want 1 to 1024 ranks", *ranks)
	}
	if *duration <= 0 {
		return usageError("bench", "--duration %v: want a positive duration", *duration)
	}
	if !flagSet(fs, "every") && *duration < soakSamples**every {
		*every = max((*duration / soakSamples).Round(time.Second), time.Second)
	}
	if *every <= 0 {
		return usageError("bench", "--every %v: want a positive duration", *every)
	}
	maxSize, err := units.ParseSize(*maxSizeFlag)
	if err != nil || maxSize < 1 || maxSize > 256<<20 {
		return usageError("bench", "--max-size %q: want a size from 1 to 256M", *maxSizeFlag)
	}
	var transports []string
	switch *transport {
	case "all":
		transports = soakTransports
	case "shm", "tcp", "inproc":
		transports = []string{*transport}
	default:
		return usageError("bench", "--transport %q: want shm, tcp, inproc or all", *transport)
	}
	if *seed == 0 {
		*seed = rand.Uint64()
	}
	cfg := bench.SoakConfig{Duration: *duration, Every: *every, Seed: *seed, MaxSize: int(maxSize)}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	progress := io.Writer(os.Stdout)
	if *asJSON {
		progress = os.Stderr
	}
	failed := false
	for _, tr := range transports {
		fmt.Fprintf(progress, "soak %s: %d ranks for %v, a sample every %v (the first a warm-up), seed %d\n", tr, *ranks, cfg.Duration, cfg.Every, cfg.Seed)
		c := cfg
		c.Progress = func(s bench.SoakSample) { fmt.Fprintf(progress, "soak %s %s\n", tr, s) }
		if *heapProfiles != "" {
			c.HeapProfiles = filepath.Join(*heapProfiles, tr)
			if err := os.MkdirAll(c.HeapProfiles, 0o755); err != nil {
				fmt.Fprintf(os.Stderr, "commtune bench soak: --heap-profiles: %v\n", err)
				return 1
			}
			if tr == "inproc" {
				runtime.MemProfileRate = heapProfileRate
			}
		}
		rep, err := soakRun(ctx, c, *ranks, tr)
		if err != nil {
			fmt.Fprintf(os.Stderr, "commtune bench soak: %s: %v\n", tr, err)
			failed = true
			continue
		}
		rep.Transport = tr
		writeSoakVerdict(progress, rep)
		if *asJSON {
			json.NewEncoder(os.Stdout).Encode(rep)
		}
		failed = failed || !rep.Verdict.Pass
	}
	if failed {
		return 1
	}
	return 0
}

// writeSoakVerdict prints a report's verdict and payload errors.
func writeSoakVerdict(w io.Writer, rep *bench.SoakReport) {
	for _, e := range rep.Errors {
		fmt.Fprintf(w, "soak %s payload error: %s\n", rep.Transport, e)
	}
	if rep.Verdict.Pass {
		fmt.Fprintf(w, "soak %s: pass (%d samples; no payload error; memory flat within %.0f %%; descriptors and goroutines unchanged)\n",
			rep.Transport, len(rep.Samples), 100*bench.SoakGrowthLimit)
		return
	}
	fmt.Fprintf(w, "soak %s: FAIL\n", rep.Transport)
	for _, f := range rep.Verdict.Failures {
		fmt.Fprintf(w, "  %s\n", f)
	}
}

// soakRun runs one transport's soak: on goroutine ranks here (inproc), or
// on n processes of this executable through the launcher.
func soakRun(ctx context.Context, cfg bench.SoakConfig, n int, transport string) (*bench.SoakReport, error) {
	if transport == "inproc" {
		var rep *bench.SoakReport
		cfg.OneProcess = true
		err := commtune.Local(n, func(c *commtune.Comm) error {
			r, err := bench.Soak(ctx, c, cfg)
			if c.Rank() == 0 {
				rep = r
			}
			return err
		})
		return rep, err
	}
	argv, err := launch.Self("bench-rank", "soak", "--duration", cfg.Duration.String(), "--every", cfg.Every.String(),
		"--seed", strconv.FormatUint(cfg.Seed, 10), "--max-size", strconv.Itoa(cfg.MaxSize), "--heap-profiles", cfg.HeapProfiles)
	if err != nil {
		return nil, err
	}
	env := []string{commtune.EnvTransports + "=tcp"}
	if transport == "shm" {
		env = []string{commtune.EnvTransports + "=shm,tcp"}
	}
	var report []byte
	lines := &lineWriter{fn: func(line []byte) {
		var p soakProgress
		if bytes.HasPrefix(line, []byte(`{"soak_sample"`)) && json.Unmarshal(line, &p) == nil {
			cfg.Progress(p.Sample)
			return
		}
		report = append(report[:0], line...)
	}}
	err = launch.Run(ctx, launch.Options{N: n, Args: argv, Env: env, Stdout: lines})
	lines.Flush()
	if err != nil {
		return nil, err
	}
	var rep bench.SoakReport
	if err := json.Unmarshal(report, &rep); err != nil {
		return nil, fmt.Errorf("reading rank 0's report %q: %w", report, err)
	}
	return &rep, nil
}

// heapProfileRate samples one allocation per 64 KiB for --heap-profiles:
// fine enough to find a slow leak, coarse enough that the sampler's own
// tables barely move the resident memory the soak reads.
const heapProfileRate = 64 << 10

// soakProgress is the line rank 0 of a soak writes at each sample.
type soakProgress struct {
	Sample bench.SoakSample `json:"soak_sample"`
}

// soakRankMain is the hidden `commtune bench-rank soak ...`: one rank of
// a soak; rank 0 writes each sample, then the report, as JSON lines.
func soakRankMain(args []string) int {
	fs := newFlagSet("bench-rank soak", "--duration D --every D --seed S --max-size B")
	duration := fs.Duration("duration", time.Minute, "how long")
	every := fs.Duration("every", 10*time.Second, "sample interval")
	seed := fs.Uint64("seed", 1, "seed")
	maxSize := fs.Int("max-size", bench.SoakMaxSize, "largest message, bytes")
	heapProfiles := fs.String("heap-profiles", "", "directory for heap profiles")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if *heapProfiles != "" {
		runtime.MemProfileRate = heapProfileRate
	}
	out := json.NewEncoder(os.Stdout)
	cfg := bench.SoakConfig{Duration: *duration, Every: *every, Seed: *seed, MaxSize: *maxSize, Job: os.Getenv(boot.EnvJob),
		HeapProfiles: *heapProfiles, Progress: func(s bench.SoakSample) { out.Encode(soakProgress{s}) }}
	return runRank(func(ctx context.Context, c *commtune.Comm, _ control.Endpoint) (any, error) {
		rep, err := bench.Soak(ctx, c, cfg)
		if rep == nil || err != nil {
			return nil, err
		}
		return rep, nil
	})
}
