package main

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"testing"

	"github.com/commtune/commtune/examples/internal/ftkit"
	"github.com/commtune/commtune/internal/conformance"
	"github.com/commtune/commtune/internal/exampletest"
)

func TestMain(m *testing.M) {
	exampletest.RankMain(main)
	os.Exit(m.Run())
}

// TestDealt: every unfinished task goes to exactly one rank, at most
// batch per rank, and finished ones to none.
func TestDealt(t *testing.T) {
	table := make([]uint64, 23)
	for _, i := range []int{0, 4, 5, 17} {
		table[i] = 1
	}
	for _, p := range []int{1, 3, 8} {
		for _, batch := range []int{1, 4, 100} {
			seen := map[int]int{}
			for r := range p {
				mine := dealt(table, r, p, batch)
				if len(mine) > batch {
					t.Errorf("p=%d batch=%d: rank %d got %d tasks", p, batch, r, len(mine))
				}
				for _, i := range mine {
					seen[i]++
				}
			}
			for i, v := range table {
				switch {
				case v != 0 && seen[i] != 0:
					t.Errorf("p=%d batch=%d: finished task %d dealt", p, batch, i)
				case seen[i] > 1:
					t.Errorf("p=%d batch=%d: task %d dealt %d times", p, batch, i, seen[i])
				case v == 0 && batch*p >= len(table) && seen[i] != 1:
					t.Errorf("p=%d batch=%d: task %d not dealt, with room for all", p, batch, i)
				}
			}
		}
	}
}

// TestKilledRanks runs the bag as a job of 8 processes over TCP and
// shared memory with no rank, one and two ranks killed partway, and one
// killed there with another killed in the recovery (the survivors
// shrink twice): the
// printed total must be the one computed here serially, the lost ranks
// the victims and the survivors the rest. COMMTUNE_EXAMPLE_RUNS repeats
// each job.
func TestKilledRanks(t *testing.T) {
	const n, tasks, work = 8, 300, 20000
	var want uint64
	for i := range tasks {
		want += task(i, work)
	}
	line := regexp.MustCompile(`(?m)^\[(\d+)\] total = (\d+) \(expected (\d+)\), lost ranks \[([0-9 ]*)\], survivors (\d+)$`)
	recovered := regexp.MustCompile(`(?m)^\[\d+\] round \d+: recovered on (\d+) ranks .*$`)
	runs := exampletest.Runs(t)
	for _, tr := range conformance.Transports {
		for _, tc := range []struct{ kill, inRecovery []int }{
			{nil, nil}, {[]int{3}, nil}, {[]int{0, 5}, nil}, {[]int{3}, []int{6}},
		} {
			victims := slices.Concat(tc.kill, tc.inRecovery)
			slices.Sort(victims)
			t.Run(fmt.Sprintf("%s/kill=%v/in-recovery=%v", tr.Name, tc.kill, tc.inRecovery), func(t *testing.T) {
				args := []string{"-tasks", strconv.Itoa(tasks), "-work", strconv.Itoa(work), "-batch", "4", "-kill-after", "6",
					"-kill", ftkit.FormatRanks(tc.kill), "-kill-in-recovery", ftkit.FormatRanks(tc.inRecovery)}
				for run := range runs {
					out, lostRanks, err := exampletest.Job(n, args, tr.Env)
					// The survivors go on: the job succeeds.
					if err != nil {
						t.Fatalf("run %d: %v\n%s", run, err, out)
					}
					if err := exampletest.CheckLost(lostRanks, victims); err != nil {
						t.Fatalf("run %d: %v\n%s", run, err, out)
					}
					m := line.FindAllStringSubmatch(out, -1)
					if len(m) != 1 {
						t.Fatalf("run %d: %d total lines, want 1\n%s", run, len(m), out)
					}
					got, _ := strconv.ParseUint(m[0][2], 10, 64)
					lost := fmt.Sprint(victims)
					if victims == nil {
						lost = "[]"
					}
					if got != want || m[0][3] != m[0][2] || "["+m[0][4]+"]" != lost || m[0][5] != strconv.Itoa(n-len(victims)) {
						t.Fatalf("run %d: %q, want total %d, lost ranks %s, survivors %d\n%s", run, m[0][0], want, lost, n-len(victims), out)
					}
					// The survivors said they recovered, the last time on all of them.
					rec := recovered.FindAllStringSubmatch(out, -1)
					switch {
					case len(victims) == 0 && len(rec) > 0:
						t.Fatalf("run %d: a recovery without a loss\n%s", run, out)
					case len(victims) > 0 && (len(rec) == 0 || rec[len(rec)-1][1] != strconv.Itoa(n-len(victims))):
						t.Fatalf("run %d: no recovery on the %d survivors reported\n%s", run, n-len(victims), out)
					}
					if run == 0 {
						for _, r := range rec {
							t.Log(r[0])
						}
						t.Log(m[0][0])
					}
				}
			})
		}
	}
}
