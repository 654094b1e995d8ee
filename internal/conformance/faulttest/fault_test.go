package faulttest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/commtune/commtune"
	"github.com/commtune/commtune/internal/conformance"
	"github.com/commtune/commtune/internal/launch"
)

// A rank killed in the middle of a collective: every survivor's call must
// fail with ErrPeerLost naming it, soon, whether or not the survivor
// exchanges with it directly, and without any survivor closing its
// communicator first (a close would end its peers' waits by itself and
// hide a survivor that waits forever).

// The fault job's parameters.
const (
	faultVictim = 2               // the rank that kills itself: neither root 0 nor the last
	faultBound  = time.Second     // a survivor must have its error this soon after the kill
	faultHold   = 5 * time.Second // survivors stay open until all have reported, at most this long after the kill
)

// faultCase is one collective loop a victim is killed in.
type faultCase struct {
	op   string // allreduce, bcast or halo
	size int    // bytes per call (halo: per face)
}

func (fc faultCase) String() string { return fmt.Sprintf("%s/%d", fc.op, fc.size) }

// parseFaultCase reads what faultCase.String wrote.
func parseFaultCase(s string) (faultCase, error) {
	op, size, ok := strings.Cut(s, "/")
	n, err := strconv.Atoi(size)
	if !ok || err != nil || n < 8 {
		return faultCase{}, fmt.Errorf("fault case %q: want op/bytes", s)
	}
	return faultCase{op, n}, nil
}

// faultCases are the loops the fault test kills a rank in: allreduce
// from 8 bytes to 1 MiB (eager, segmented and rendezvous), a 16 MiB
// broadcast, and a halo exchange.
func faultCases() []faultCase {
	return []faultCase{
		{"allreduce", 8}, {"allreduce", 64 << 10}, {"allreduce", 1 << 20},
		{"bcast", 16 << 20},
		{"halo", 4 << 10},
	}
}

// faultLoop returns one call of fc's loop on c.
func faultLoop(c *commtune.Comm, fc faultCase) (func(context.Context) error, error) {
	switch fc.op {
	case "allreduce":
		send, recv := make([]float64, fc.size/8), make([]float64, fc.size/8)
		return func(ctx context.Context) error {
			return commtune.Allreduce(ctx, c, send, recv, commtune.Sum)
		}, nil
	case "bcast":
		buf := make([]byte, fc.size)
		return func(ctx context.Context) error { return commtune.Bcast(ctx, c, buf, 0) }, nil
	case "halo":
		dims := make([]int, 2)
		if err := commtune.DimsCreate(c.Size(), dims); err != nil {
			return nil, err
		}
		cart, err := c.Cart(dims, []bool{true, false})
		if err != nil {
			return nil, err
		}
		side := fc.size / 8
		ext := []int{side, side}
		data := make([]float64, (side+2)*(side+2))
		h, err := commtune.NewHalo(cart, data, ext, 1, 1)
		if err != nil {
			return nil, err
		}
		return h.Exchange, nil
	}
	return nil, fmt.Errorf("unknown fault loop %q", fc.op)
}

// killCollective runs the fault job of one rank. arg is "dir;case": the
// victim writes the moment it dies to dir/killed, and each survivor
// dir/done.R once it has its error. A survivor prints
// "rank R: lost rank V after D: err" and waits, open, until every
// survivor has reported or faultHold after the kill.
func killCollective(ctx context.Context, c *commtune.Comm, arg string) error {
	dir, spec, _ := strings.Cut(arg, ";")
	fc, err := parseFaultCase(spec)
	if err != nil {
		return err
	}
	call, err := faultLoop(c, fc)
	if err != nil {
		return err
	}
	// Every rank is in the loop before the victim can die.
	if err := c.Barrier(ctx); err != nil {
		return err
	}
	dumpStacksOnTerm()
	if c.Rank() == faultVictim {
		go func() {
			time.Sleep(20*time.Millisecond + rand.N(30*time.Millisecond))
			os.WriteFile(filepath.Join(dir, "killed"), []byte(strconv.FormatInt(time.Now().UnixNano(), 10)), 0o600)
			killSelf()
		}()
	}
	calls := 0
	for {
		if err = call(ctx); err != nil {
			break
		}
		calls++
	}
	noticed := time.Now()
	stamp, _ := os.ReadFile(filepath.Join(dir, "killed"))
	killed, _ := strconv.ParseInt(strings.TrimSpace(string(stamp)), 10, 64)
	if killed == 0 {
		return fmt.Errorf("call %d failed before the victim died: %w", calls, err)
	}
	var pl *commtune.PeerLostError
	lost := -1
	if errors.As(err, &pl) {
		lost = pl.Rank
	}
	fmt.Printf("rank %d: lost rank %d after %v (call %d, canceled %t): %v\n", c.Rank(), lost,
		noticed.Sub(time.Unix(0, killed)).Round(time.Microsecond), calls, errors.Is(err, commtune.ErrCanceled), err)
	os.WriteFile(filepath.Join(dir, fmt.Sprintf("done.%d", c.Rank())), nil, 0o600)
	for deadline := time.Unix(0, killed).Add(faultHold); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		done, _ := filepath.Glob(filepath.Join(dir, "done.*"))
		if len(done) == c.Size()-1 {
			break
		}
	}
	return err // exit non-zero, as a real program would
}

// dumpStacksOnTerm makes a survivor that the launcher ends (SIGTERM after
// the grace: it never had its error) print every goroutine's stack first,
// so that a rank that waits forever shows where.
func dumpStacksOnTerm() {
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	go func() {
		<-term
		fmt.Fprintln(os.Stderr, "ended by the launcher while still in its call; goroutines:")
		pprof.Lookup("goroutine").WriteTo(os.Stderr, 2)
		os.Exit(3)
	}()
}

// TestKillCollective kills rank 2 of 4 and of 8 in the middle of each of
// faultCases, over TCP and shared memory, and on two pretend nodes
// (hierarchical collectives): every survivor's call must
// return an error that is ErrPeerLost naming rank 2, never ErrCanceled,
// within faultBound of the kill, with no survivor closing before all have
// their error. COMMTUNE_FAULT_RUNS repeats every job (default 1).
func TestKillCollective(t *testing.T) {
	runs := conformance.CountFromEnv(t, "COMMTUNE_FAULT_RUNS", 1, 1)
	line := regexp.MustCompile(`(?m)^\[(\d+)\] rank (\d+): lost rank (-?\d+) after (\S+) \(call \d+, canceled (true|false)\): (.*)$`)
	type setup struct {
		name  string
		env   string
		nodes int // pretend nodes; 0: one
	}
	var setups []setup
	for _, tr := range conformance.Transports {
		setups = append(setups, setup{tr.Name, tr.Env, 0})
	}
	// Two pretend nodes: the collectives are hierarchical, rank 2 leads
	// the second node of 4 ranks and is led on that of 8.
	setups = append(setups, setup{"nodes", "COMMTUNE_TRANSPORTS=shm,tcp", 2})
	for _, su := range setups {
		for _, n := range []int{4, 8} {
			for _, fc := range faultCases() {
				if su.nodes > 1 && fc.op == "halo" {
					continue // no collective
				}
				t.Run(fmt.Sprintf("%s/n=%d/%s", su.name, n, fc), func(t *testing.T) {
					for run := range runs {
						dir := t.TempDir()
						// The launcher must not end the survivors before they report.
						out, err := conformance.RunJobNodes(n, su.nodes, faultHold+2*time.Second, "killcoll", dir+";"+fc.String(), su.env)
						var re *launch.RankError
						if !errors.As(err, &re) || re.Rank != faultVictim || re.Signal != syscall.SIGKILL {
							t.Fatalf("run %d: launcher error %v, want rank %d killed by SIGKILL\n%s", run, err, faultVictim, out)
						}
						seen := map[int]bool{}
						var worst time.Duration
						for _, m := range line.FindAllStringSubmatch(out, -1) {
							r, _ := strconv.Atoi(m[2])
							lost, _ := strconv.Atoi(m[3])
							after, perr := time.ParseDuration(m[4])
							seen[r] = true
							worst = max(worst, after)
							switch {
							case lost != faultVictim:
								t.Errorf("run %d: rank %d: error names rank %d, want %d: %s", run, r, lost, faultVictim, m[6])
							case m[5] == "true":
								t.Errorf("run %d: rank %d: ErrCanceled: %s", run, r, m[6])
							case perr != nil || after > faultBound:
								t.Errorf("run %d: rank %d: error %s after the kill, want within %v: %s", run, r, m[4], faultBound, m[6])
							}
						}
						for r := range n {
							if r != faultVictim && !seen[r] {
								t.Errorf("run %d: rank %d never returned from its call", run, r)
							}
						}
						t.Logf("run %d: slowest survivor %v", run, worst)
						if t.Failed() {
							t.Logf("run %d:\n%s", run, out)
						}
					}
				})
			}
		}
	}
}
