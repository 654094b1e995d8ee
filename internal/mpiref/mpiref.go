// Package mpiref runs the reference side of `commtune bench ... --vs mpi`:
// a small C program (csrc/mpibench.c) built with the installed MPI's
// compiler wrapper and started with its launcher, measuring what
// internal/bench measures, the same way, so the two can be printed side by
// side with ratios.
package mpiref

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/commtune/commtune/internal/bench"
)

//go:embed csrc/mpibench.c
var source []byte

// Impl is one installed MPI: its name, compiler wrapper and launcher.
type Impl struct {
	Name string // "openmpi" or "mpich"
	CC   string // path of mpicc
	Run  string // path of mpirun / mpiexec
	// TCP makes ranks on one node talk over TCP, as commtune's tcp
	// transport does, rather than through shared memory: Open MPI with
	// its tcp and self transports only, MPICH as if each rank were on a
	// node of its own (MPIR_CVAR_NOLOCAL).
	TCP bool
}

// ErrNotFound says no MPI implementation with a compiler wrapper and a
// launcher is installed.
var ErrNotFound = errors.New("no MPI found: install Open MPI (apt-get install openmpi-bin libopenmpi-dev) or MPICH (apt-get install mpich)")

// candidates are the implementations in order of preference, with Debian's
// suffixed names first so that the alternatives link does not decide.
var candidates = []struct{ name, cc, run string }{
	{"openmpi", "mpicc.openmpi", "mpirun.openmpi"},
	{"mpich", "mpicc.mpich", "mpiexec.mpich"},
}

// Find returns the implementation named want ("mpi" for the first one
// installed, "openmpi" or "mpich").
func Find(want string) (Impl, error) {
	if want != "mpi" && want != "openmpi" && want != "mpich" {
		return Impl{}, fmt.Errorf("unknown MPI %q: want mpi, openmpi or mpich", want)
	}
	for _, c := range candidates {
		if want != "mpi" && want != c.name {
			continue
		}
		cc, err1 := exec.LookPath(c.cc)
		run, err2 := exec.LookPath(c.run)
		if err1 == nil && err2 == nil {
			return Impl{Name: c.name, CC: cc, Run: run}, nil
		}
	}
	if want != "mpi" {
		return Impl{}, fmt.Errorf("%s not found (%w)", want, ErrNotFound)
	}
	return Impl{}, ErrNotFound
}

// Build compiles the reference benchmark with i's compiler wrapper into
// dir, once per source and implementation, and returns the program's path.
func (i Impl) Build(ctx context.Context, dir string) (string, error) {
	sum := sha256.Sum256(append(append([]byte(i.CC+"\x00"), source...), i.Name...))
	bin := filepath.Join(dir, "mpibench-"+i.Name+"-"+hex.EncodeToString(sum[:6]))
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	src := bin + ".c"
	if err := os.WriteFile(src, source, 0o644); err != nil {
		return "", err
	}
	tmp := bin + ".tmp"
	out, err := exec.CommandContext(ctx, i.CC, "-O2", "-o", tmp, src).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("building the reference benchmark with %s: %v\n%s", i.CC, err, out)
	}
	return bin, os.Rename(tmp, bin)
}

// command returns the launcher command running n ranks of bin with args.
// Open MPI binds each rank to a core when there are enough, as its users
// do, and otherwise oversubscribes without binding; MPICH's Hydra needs
// neither.
func (i Impl) command(ctx context.Context, n int, bin string, args ...string) *exec.Cmd {
	var argv []string
	if i.Name == "openmpi" {
		if os.Geteuid() == 0 {
			argv = append(argv, "--allow-run-as-root")
		}
		if n <= runtime.NumCPU() {
			argv = append(argv, "--bind-to", "core")
		} else {
			argv = append(argv, "--oversubscribe", "--bind-to", "none")
		}
		if i.TCP {
			argv = append(argv, "--mca", "btl", "tcp,self")
		}
	}
	argv = append(argv, "-n", strconv.Itoa(n), bin)
	cmd := exec.CommandContext(ctx, i.Run, append(argv, args...)...)
	cmd.Env = os.Environ()
	if i.TCP && i.Name == "mpich" {
		cmd.Env = append(cmd.Env, "MPIR_CVAR_NOLOCAL=1")
	}
	return cmd
}

// run starts n ranks of the reference benchmark and decodes each line rank 0
// prints with decode.
func (i Impl) run(ctx context.Context, bin string, n int, decode func([]byte) error, args ...string) error {
	return runCommand(i.command(ctx, n, bin, args...), nil, decode)
}

// runCommand runs cmd, a launcher command from command, calling started
// (if not nil) with the launcher's pid once it is running, and decodes
// each line rank 0 prints with decode.
func runCommand(cmd *exec.Cmd, started func(pid int), decode func([]byte) error) error {
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Start()
	if err == nil {
		if started != nil {
			started(cmd.Process.Pid)
		}
		err = cmd.Wait()
	}
	if err != nil {
		return fmt.Errorf("%s: %v\n%s", strings.Join(cmd.Args, " "), err, strings.TrimSpace(stderr.String()))
	}
	sc := bufio.NewScanner(&stdout)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 || line[0] != '{' {
			continue // launcher chatter
		}
		if err := decode(line); err != nil {
			return fmt.Errorf("reference benchmark printed %q: %w", line, err)
		}
	}
	return sc.Err()
}

func sizeArg(sizes []int) string {
	s := make([]string, len(sizes))
	for k, v := range sizes {
		s[k] = strconv.Itoa(v)
	}
	return strings.Join(s, ",")
}

// PingPong runs the reference ping-pong between two ranks of bin.
func (i Impl) PingPong(ctx context.Context, bin string, sizes []int, iters int) ([]bench.Result, error) {
	var out []bench.Result
	err := i.run(ctx, bin, 2, func(line []byte) error {
		var r bench.Result
		err := json.Unmarshal(line, &r)
		out = append(out, r)
		return err
	}, "pingpong", sizeArg(sizes), strconv.Itoa(iters))
	if err == nil && len(out) != len(sizes) {
		err = fmt.Errorf("reference ping-pong reported %d of %d sizes", len(out), len(sizes))
	}
	return out, err
}

// Coll runs the reference collective op on n ranks of bin, its calls
// timed as timing says.
func (i Impl) Coll(ctx context.Context, bin string, n int, op string, sizes []int, iters int, timing bench.Timing) ([]bench.CollResult, error) {
	timing, err := bench.ParseTiming(string(timing))
	if err != nil {
		return nil, err
	}
	var out []bench.CollResult
	err = i.run(ctx, bin, n, func(line []byte) error {
		var r bench.CollResult
		err := json.Unmarshal(line, &r)
		r.Algo = i.Name
		out = append(out, r)
		return err
	}, "coll", op, sizeArg(sizes), strconv.Itoa(iters), string(timing))
	if err == nil && len(out) != len(sizes) {
		err = fmt.Errorf("reference %s reported %d of %d sizes", op, len(out), len(sizes))
	}
	return out, err
}

// Startup launches the startup job on n ranks of bin (one Allreduce,
// checked) and returns its times as `commtune bench startup` takes
// commtune's: the wall time from starting the launcher to its exit, every
// rank having exited, and the time from the same start to the last rank's
// Allreduce done, which the ranks measure against the start handed to
// them in bench.EnvStartupStart; env adds variables for the ranks
// (bench.EnvStartupAlltoall). started, if not nil, is called with the
// launcher's pid once it runs, for bench.MeasureStartup to sample the
// ranks, its descendants.
func (i Impl) Startup(ctx context.Context, bin string, n int, env []string, started func(pid int)) (bench.StartupTimes, error) {
	cmd := i.command(ctx, n, bin, "startup")
	var lines []bench.StartupRank
	decode := func(line []byte) error {
		var r bench.StartupRank
		err := json.Unmarshal(line, &r)
		lines = append(lines, r)
		return err
	}
	start := time.Now()
	cmd.Env = append(append(cmd.Env, env...), bench.EnvStartupStart+"="+strconv.FormatInt(start.UnixNano(), 10))
	err := runCommand(cmd, started, decode)
	wall := time.Since(start)
	if err != nil {
		return bench.StartupTimes{}, err
	}
	if len(lines) != 1 {
		return bench.StartupTimes{}, fmt.Errorf("reference startup printed %d lines, want 1", len(lines))
	}
	return lines[0].Times(n, wall)
}

// RMA runs the reference one-sided pattern (bench.RMA's) on two ranks of
// bin, over a window of kind "alloc" or "new".
func (i Impl) RMA(ctx context.Context, bin, pattern string, sizes []int, iters int, window string) ([]bench.CollResult, error) {
	var out []bench.CollResult
	err := i.run(ctx, bin, 2, func(line []byte) error {
		var r bench.CollResult
		err := json.Unmarshal(line, &r)
		out = append(out, r)
		return err
	}, "rma", pattern, sizeArg(sizes), strconv.Itoa(iters), window)
	if err == nil && len(out) != len(sizes) {
		err = fmt.Errorf("reference %s reported %d of %d sizes", pattern, len(out), len(sizes))
	}
	return out, err
}

// Ops are the collective operations the reference benchmark implements.
var Ops = []string{"barrier", "bcast", "reduce", "allreduce", "allgather", "alltoall", "gather", "scatter",
	"reducescatterblock", "reducescatter", "scan", "exscan"}

// CacheDir is where Build keeps the compiled reference benchmark.
func CacheDir() (string, error) {
	d, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(d, "commtune", "mpibench"), nil
}
