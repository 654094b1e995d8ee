package main

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/commtune/commtune/examples/internal/ftkit"
	"github.com/commtune/commtune/internal/conformance"
	"github.com/commtune/commtune/internal/exampletest"
)

func TestMain(m *testing.M) {
	exampletest.RankMain(main)
	os.Exit(m.Run())
}

// TestAssemble: the pieces of a decomposition, held by several ranks and
// some twice, make the global grid cell for cell; an owner nobody holds is
// named missing.
func TestAssemble(t *testing.T) {
	grid := [3]int{5, 4, 3}
	g := make([]float64, 5*4*3)
	for i := range g {
		g[i] = float64(i + 1) // cell-specific
	}
	// A 2×2×1 decomposition, by hand: split as Cart would lay it out.
	var pieces []Piece
	for o := range 4 {
		var b block
		coords := [3]int{o / 2, o % 2, 0}
		dims := [3]int{2, 2, 1}
		for d := range 3 {
			b.ext[d], b.off[d] = split(grid[d], dims[d], coords[d])
		}
		u := make([]float64, b.cells())
		b.unpack(u, g, grid)
		pieces = append(pieces, b.piece(o, 4, 30, u))
	}
	cases := []struct {
		name    string
		held    []Held
		missing []int
	}{
		{"all", []Held{{pieces[:2]}, {pieces[1:]}}, nil},
		{"owner 2 lost", []Held{{pieces[:2]}, {[]Piece{pieces[3], pieces[0]}}}, []int{2}},
	}
	for _, tc := range cases {
		r := assemble(tc.held, grid)
		if !slices.Equal(r.Missing, tc.missing) || r.Iter != 30 {
			t.Errorf("%s: missing %v iteration %d, want %v and 30", tc.name, r.Missing, r.Iter, tc.missing)
		}
		if tc.missing == nil && !slices.Equal(r.Grid, g) {
			t.Errorf("%s: assembled grid differs from the original", tc.name)
		}
	}
}

// reference is the checksum of the iteration run on the whole grid in
// this process.
func reference(grid [3]int, iters int) uint64 {
	b := block{ext: grid}
	cur, next := make([]float64, b.cells()), make([]float64, b.cells())
	for range iters {
		sweep(b, cur, next, source(grid))
		cur, next = next, cur
	}
	return checksum(b.piece(0, 1, iters, cur).Data)
}

// TestKilledRanks runs the solver as a job of 8 processes over TCP and
// shared memory with no rank, one and two ranks (neighbours, each the
// other's buddy) killed at iteration 25, between the checkpoints of 20
// and 30, and one killed there with another killed in the recovery
// (the survivors shrink twice): the checksum must be the one of the same iteration on the whole
// grid here, bit for bit, the lost ranks the victims and the survivors
// the rest. Three consecutive ranks killed lose a block with both its
// copies: the survivors must say so and fail. COMMTUNE_EXAMPLE_RUNS
// repeats each job.
func TestKilledRanks(t *testing.T) {
	const n, iters = 8, 60
	grid := [3]int{24, 24, 24}
	want := fmt.Sprintf("%016x", reference(grid, iters))
	line := regexp.MustCompile(`(?m)^\[(\d+)\] checksum ([0-9a-f]{16}) after (\d+) iterations on \S+, lost ranks \[([0-9 ]*)\], survivors (\d+)$`)
	recovered := regexp.MustCompile(`(?m)^\[\d+\] recovered on (\d+) ranks .*: back to iteration (\d+)$`)
	runs := exampletest.Runs(t)
	for _, tr := range conformance.Transports {
		for _, tc := range []struct{ kill, inRecovery []int }{
			{nil, nil}, {[]int{3}, nil}, {[]int{2, 3}, nil}, {[]int{3}, []int{6}}, {[]int{2, 3, 4}, nil},
		} {
			victims := slices.Concat(tc.kill, tc.inRecovery)
			t.Run(fmt.Sprintf("%s/kill=%v/in-recovery=%v", tr.Name, tc.kill, tc.inRecovery), func(t *testing.T) {
				args := []string{"-grid", "24x24x24", "-iters", strconv.Itoa(iters), "-checkpoint", "10", "-buddies", "2", "-kill-at", "25",
					"-kill", ftkit.FormatRanks(tc.kill), "-kill-in-recovery", ftkit.FormatRanks(tc.inRecovery)}
				for run := range runs {
					out, lostRanks, err := exampletest.Job(n, args, tr.Env, "COMMTUNE_HALO_STATE=off")
					// The survivors go on: the job succeeds, unless the lost
					// blocks cannot be restored and every survivor fails.
					if err != nil && len(victims) != 3 {
						t.Fatalf("run %d: %v\n%s", run, err, out)
					}
					if err := exampletest.CheckLost(lostRanks, victims); err != nil && len(victims) != 3 {
						t.Fatalf("run %d: %v\n%s", run, err, out)
					}
					if len(victims) == 3 {
						// Block 2's copies were on 3 and 4: every survivor fails.
						if c := strings.Count(out, "cannot recover: the blocks of ranks [2] of the last checkpoint died with all 2 of their buddies"); c != n-3 {
							t.Fatalf("run %d: %d survivors said block 2 was lost, want %d\n%s", run, c, n-3, out)
						}
						if line.MatchString(out) {
							t.Fatalf("run %d: a checksum without block 2\n%s", run, out)
						}
						continue
					}
					m := line.FindAllStringSubmatch(out, -1)
					if len(m) != 1 {
						t.Fatalf("run %d: %d checksum lines, want 1\n%s", run, len(m), out)
					}
					lost := fmt.Sprint(victims)
					if victims == nil {
						lost = "[]"
					}
					if m[0][2] != want || m[0][3] != strconv.Itoa(iters) || "["+m[0][4]+"]" != lost || m[0][5] != strconv.Itoa(n-len(victims)) {
						t.Fatalf("run %d: %q, want checksum %s after %d iterations, lost ranks %s, survivors %d\n%s", run, m[0][0], want, iters, lost, n-len(victims), out)
					}
					rec := recovered.FindAllStringSubmatch(out, -1)
					switch {
					case len(victims) == 0 && len(rec) > 0:
						t.Fatalf("run %d: a recovery without a loss\n%s", run, out)
					case len(victims) > 0 && (len(rec) == 0 || rec[len(rec)-1][1] != strconv.Itoa(n-len(victims)) || rec[len(rec)-1][2] != "20"):
						t.Fatalf("run %d: no recovery on the %d survivors back to iteration 20\n%s", run, n-len(victims), out)
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
