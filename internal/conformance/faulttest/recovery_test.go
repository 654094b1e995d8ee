package faulttest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/commtune/commtune"
	"github.com/commtune/commtune/internal/config"
	"github.com/commtune/commtune/internal/conformance"
	"github.com/commtune/commtune/internal/control"
)

// recoveryBound is how long after the last victim died every survivor
// must have the communicator it ends on (the Shrink that made it
// returned; the collective matrix it then runs is not counted: under the
// race detector it alone takes seconds).
const recoveryBound = 2 * time.Second

// recoverJob is the rank program of a process recovery job. arg is
// "dir;plan": a victim writes the moment it dies to dir/killed.R and
// SIGKILLs itself; a survivor prints its report.
func recoverJob(ctx context.Context, c *commtune.Comm, arg string) error {
	dir, spec, _ := strings.Cut(arg, ";")
	plan, err := conformance.ParseRecoveryPlan(spec)
	if err != nil {
		return err
	}
	rep, err := conformance.Recover(ctx, c, plan, func() {
		os.WriteFile(filepath.Join(dir, fmt.Sprintf("killed.%d", c.Rank())), []byte(strconv.FormatInt(time.Now().UnixNano(), 10)), 0o600)
		killSelf()
		select {}
	})
	if err != nil {
		return err
	}
	fmt.Println(rep)
	return nil
}

// recoveryPlans returns the plans of runs jobs of n ranks: the phases in
// turn, one victim or two, at random moments.
func recoveryPlans(runs, n int, rng *rand.Rand) []conformance.RecoveryPlan {
	var plans []conformance.RecoveryPlan
	for i := range runs {
		k := 1 + (i+i/len(conformance.RecoveryPhases))%2 // each phase meets one victim and two
		victims := rng.Perm(n)[:k]
		slices.Sort(victims)
		plans = append(plans, conformance.RecoveryPlan{
			Phase:   conformance.RecoveryPhases[i%len(conformance.RecoveryPhases)],
			Victims: victims,
			Delay:   time.Duration(rng.Int64N(int64(25 * time.Millisecond))),
		})
	}
	return plans
}

var reportLine = regexp.MustCompile(`(?m)^(?:\[\d+\] )?recovery rank (\d+): (final .*) done (\d+)$`)

// checkReports compares the survivors' reports of one job: one from each
// survivor, all the same, ending on the communicator of the survivors,
// each within recoveryBound of the last death (killed: its time).
func checkReports(t *testing.T, plan conformance.RecoveryPlan, n int, reports map[int]conformance.RecoveryReport, killed time.Time) time.Duration {
	defer func() {
		if testing.Verbose() {
			for _, r := range reports {
				t.Logf("%v: %s", plan, r.Same())
				break
			}
		}
	}()
	t.Helper()
	var survivors []int
	for r := range n {
		if !slices.Contains(plan.Victims, r) {
			survivors = append(survivors, r)
		}
	}
	var first string
	var worst time.Duration
	for _, r := range survivors {
		rep, ok := reports[r]
		if !ok {
			t.Errorf("%v: rank %d gave no report", plan, r)
			continue
		}
		if rep.Calls == 0 {
			t.Errorf("%v: rank %d ran no collective on the recovered communicator", plan, r)
		}
		if !slices.Equal(rep.Final, survivors) {
			t.Errorf("%v: rank %d ended on members %v, want %v", plan, r, rep.Final, survivors)
		}
		if first == "" {
			first = rep.Same()
		} else if rep.Same() != first {
			t.Errorf("%v: rank %d saw %s\nwhile rank %d saw %s", plan, r, rep.Same(), survivors[0], first)
		}
		after := rep.Done.Sub(killed)
		worst = max(worst, after)
		if after > recoveryBound {
			t.Errorf("%v: rank %d recovered %v after the last death, want within %v", plan, r, after, recoveryBound)
		}
	}
	return worst
}

// TestRecoveryLocal kills goroutine ranks (Endpoint.Crash) at random
// moments of every phase, at 4 and 8 ranks; COMMTUNE_RECOVERY_RUNS jobs
// each (default 10).
func TestRecoveryLocal(t *testing.T) {
	runs := conformance.CountFromEnv(t, "COMMTUNE_RECOVERY_RUNS", 10, 5)
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	for _, n := range []int{4, 8} {
		t.Run(fmt.Sprintf("n=%d", n), func(t *testing.T) {
			var worst time.Duration
			for _, plan := range recoveryPlans(runs, n, rng) {
				ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
				var tap control.Tap
				var mu sync.Mutex
				reports := map[int]conformance.RecoveryReport{}
				var killed time.Time
				err := commtune.Local(n, func(c *commtune.Comm) error {
					rep, err := conformance.Recover(ctx, c, plan, func() {
						mu.Lock()
						if now := time.Now(); now.After(killed) {
							killed = now
						}
						mu.Unlock()
						tap.Of(c.Rank()).Crash(errors.New("killed by the test"))
					})
					if err != nil {
						return err
					}
					if !slices.Contains(plan.Victims, c.Rank()) {
						mu.Lock()
						reports[c.Rank()] = rep
						mu.Unlock()
					}
					return nil
				}, config.WithTap(&tap))
				cancel()
				if err != nil && !errors.Is(err, commtune.ErrClosed) {
					t.Errorf("%v: %v", plan, err)
				}
				worst = max(worst, checkReports(t, plan, n, reports, killed))
				if t.Failed() {
					return
				}
			}
			t.Logf("%d jobs; slowest recovery %v after the last death", runs, worst)
		})
	}
}

// TestRecoveryProcesses is TestRecoveryLocal over processes, on TCP and
// shared memory, under the launcher's keep-going: victims SIGKILL
// themselves, the job succeeds. COMMTUNE_RECOVERY_RUNS jobs
// per transport and size (default 5).
func TestRecoveryProcesses(t *testing.T) {
	runs := conformance.CountFromEnv(t, "COMMTUNE_RECOVERY_RUNS", 5, 5)
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 2))
	for _, tr := range conformance.Transports {
		for _, n := range []int{4, 8} {
			t.Run(fmt.Sprintf("%s/n=%d", tr.Name, n), func(t *testing.T) {
				var worst time.Duration
				for _, plan := range recoveryPlans(runs, n, rng) {
					dir := t.TempDir()
					// As under commtune run --keep-going: the survivors go on.
					out, lost, err := conformance.RunJobKeepGoing(n, "recover", dir+";"+plan.String(), tr.Env)
					if err != nil {
						t.Fatalf("%v: %v\n%s", plan, err, out)
					}
					var gone []int
					for _, e := range lost {
						if e.Signal != syscall.SIGKILL {
							t.Errorf("%v: launcher: %v, want victims killed by SIGKILL", plan, &e)
						}
						gone = append(gone, e.Rank)
					}
					if slices.Sort(gone); !slices.Equal(gone, plan.Victims) {
						t.Errorf("%v: launcher reported ranks %v lost, want %v", plan, gone, plan.Victims)
					}
					reports := map[int]conformance.RecoveryReport{}
					for _, m := range reportLine.FindAllStringSubmatch(out, -1) {
						r, _ := strconv.Atoi(m[1])
						ns, _ := strconv.ParseInt(m[3], 10, 64)
						rep := conformance.RecoveryReport{Rank: r, Done: time.Unix(0, ns)}
						reports[r] = parseSame(rep, m[2])
					}
					var killed time.Time
					for _, v := range plan.Victims {
						stamp, _ := os.ReadFile(filepath.Join(dir, fmt.Sprintf("killed.%d", v)))
						ns, _ := strconv.ParseInt(strings.TrimSpace(string(stamp)), 10, 64)
						if ns == 0 {
							t.Fatalf("%v: victim %d left no stamp\n%s", plan, v, out)
						}
						if at := time.Unix(0, ns); at.After(killed) {
							killed = at
						}
					}
					worst = max(worst, checkReports(t, plan, n, reports, killed))
					if t.Failed() {
						t.Logf("%v:\n%s", plan, out)
						return
					}
				}
				t.Logf("%d jobs; slowest recovery %v after the last death", runs, worst)
			})
		}
	}
}

// parseSame fills rep from the comparable part of a report line: enough
// to compare (Same) and to check the final members.
func parseSame(rep conformance.RecoveryReport, same string) conformance.RecoveryReport {
	m := regexp.MustCompile(`^final \[([\d ]*)\] tries (\d+) calls (\d+) shrinks (.*) agrees (.*)$`).FindStringSubmatch(same)
	if m == nil {
		return rep
	}
	for _, f := range strings.Fields(m[1]) {
		r, _ := strconv.Atoi(f)
		rep.Final = append(rep.Final, r)
	}
	rep.Tries, _ = strconv.Atoi(m[2])
	rep.Calls, _ = strconv.Atoi(m[3])
	if m[4] != "" {
		rep.Shrinks = strings.Split(m[4], ";")
	}
	if m[5] != "" {
		rep.Agrees = strings.Split(m[5], ";")
	}
	return rep
}
