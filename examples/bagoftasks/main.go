// Command bagoftasks shares a bag of independent tasks among the ranks of
// a job and survives ranks that die on the way: the survivors revoke the
// communicator, shrink it to themselves, and take over the tasks whose
// results died with their owner.
//
//	go build -o /tmp/bagoftasks ./examples/bagoftasks
//	go run ./cmd/commtune run --keep-going -n 8 -- /tmp/bagoftasks -tasks 400 -kill 3,5 -kill-after 6
//
// Task i hashes i through a chain of -work rounds; the answer is the sum
// of the chains' ends, which the lowest surviving rank checks against the
// same sum made serially, printing
//
//	total = X (expected X), lost ranks [3 5], survivors 6
//
// and the job exits non-zero if they differ.
//
// Every rank keeps the same table of finished tasks and their values.
// Work goes in rounds: the tasks not yet finished are dealt round-robin
// over the ranks, each rank computes up to -batch of its own, and a
// checkpoint combines everyone's results into every rank's table with an
// Allreduce (Max: an unfinished task is 0 in the table, and a finished one
// has the same value wherever it was computed, so merging tables that
// overlap is harmless). The ranks then Agree on whether the checkpoint
// worked everywhere, so that all of them either go on with the same table
// or recover together.
//
// A rank that dies takes with it the results it computed since the last
// checkpoint. The survivors' checkpoint fails with ErrPeerLost (or
// ErrRevoked, once one of them has revoked), the Agree says so, and each
// survivor revokes the communicator and shrinks it; on the shrunk one they
// merge their tables again — a survivor keeps what it computed in the
// failed round — and Agree again, shrinking once more if another rank died
// meanwhile. The next round deals what is still missing, the lost rank's
// tasks among them, over the survivors.
//
// -kill lists world ranks that end themselves with SIGKILL once they have
// finished -kill-after tasks, and -kill-in-recovery ranks that do so in
// the first recovery, once it shrank the communicator with them in it; the
// launcher must then let the others go on (commtune run --keep-going).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"slices"
	"syscall"

	"github.com/commtune/commtune"
	"github.com/commtune/commtune/examples/internal/ftkit"
)

func main() {
	tasks := flag.Int("tasks", 400, "tasks in the bag")
	work := flag.Int("work", 20000, "hash rounds per task (its cost)")
	batch := flag.Int("batch", 4, "tasks each rank computes between checkpoints")
	kill := flag.String("kill", "", "world ranks that SIGKILL themselves, comma-separated (e.g. 3,5)")
	killAfter := flag.Int("kill-after", 6, "tasks a -kill rank finishes before it dies")
	killRecovering := flag.String("kill-in-recovery", "", "world ranks that SIGKILL themselves in the first recovery, right after it shrank the communicator")
	flag.Parse()
	victims, err := ftkit.ParseRanks(*kill)
	var recoveryVictims []int
	if err == nil {
		recoveryVictims, err = ftkit.ParseRanks(*killRecovering)
	}
	if err != nil || *tasks < 1 || *work < 1 || *batch < 1 || *killAfter < 0 {
		fmt.Fprintf(os.Stderr, "bagoftasks: want -tasks, -work, -batch ≥ 1, -kill-after ≥ 0 and -kill like 3,5 (%v)\n", err)
		os.Exit(2)
	}
	cfg := config{tasks: *tasks, work: *work, batch: *batch, victims: victims, killAfter: *killAfter, recoveryVictims: recoveryVictims}
	if err := ftkit.InitAndRun(slices.Concat(cfg.victims, cfg.recoveryVictims), func(ctx context.Context, world *commtune.Comm) error {
		return run(ctx, world, cfg)
	}); err != nil {
		fmt.Fprintln(os.Stderr, "bagoftasks:", err)
		os.Exit(1)
	}
}

type config struct {
	tasks, work, batch int
	victims            []int // world ranks that kill themselves
	killAfter          int   // … after this many tasks
	recoveryVictims    []int // world ranks that kill themselves in the first recovery
}

// task is the work of task i: a chain of rounds of a 64-bit mixer (the
// finaliser of splitmix64) started from i. It is never 0, so 0 in a table
// means "not finished".
func task(i, rounds int) uint64 {
	x := uint64(i) + 0x9E3779B97F4A7C15
	for range rounds {
		x += 0x9E3779B97F4A7C15
		x ^= x >> 30
		x *= 0xBF58476D1CE4E5B9
		x ^= x >> 27
		x *= 0x94D049BB133111EB
		x ^= x >> 31
	}
	return x | 1
}

// dealt returns the unfinished tasks that rank r of p computes in the next
// round: the r-th, (r+p)-th … of them, at most batch. Every rank holds the
// same table, so every rank deals alike.
func dealt(table []uint64, r, p, batch int) []int {
	var mine []int
	j := 0
	for i, v := range table {
		if v != 0 {
			continue
		}
		if j%p == r {
			mine = append(mine, i)
			if len(mine) == batch {
				break
			}
		}
		j++
	}
	return mine
}

// run computes the bag on world, recovering from lost ranks, and has the
// lowest survivor print and check the total.
func run(ctx context.Context, world *commtune.Comm, cfg config) error {
	victim := slices.Contains(cfg.victims, world.Rank())
	table := make([]uint64, cfg.tasks)  // agreed results: 0 = not finished
	merged := make([]uint64, cfg.tasks) // the checkpoint's Allreduce output
	finished := 0                       // tasks this rank computed
	cur := world
	compute := true
	recovered := false // the last checkpoint failed
	shrinks := 0
	for round := 0; ; round++ {
		if compute {
			for _, i := range dealt(table, cur.Rank(), cur.Size(), cfg.batch) {
				table[i] = task(i, cfg.work)
				finished++
				if victim && finished == cfg.killAfter {
					// Die as a crash does: no goodbye, and this round's
					// results die too.
					syscall.Kill(os.Getpid(), syscall.SIGKILL)
				}
			}
		}
		// The checkpoint: every rank's table, merged.
		err := commtune.Allreduce(ctx, cur, table, merged, commtune.Max)
		ok := uint64(0)
		if err == nil {
			ok = 1
		} else if !ftkit.Lost(err) {
			return fmt.Errorf("round %d: checkpoint: %w", round, err)
		}
		v, err := cur.Agree(ctx, ok)
		if err != nil && !ftkit.Lost(err) {
			return fmt.Errorf("round %d: agreeing on the checkpoint: %w", round, err)
		}
		if err == nil && v == 1 {
			// Every rank has the same table: go on, or stop together.
			copy(table, merged)
			if recovered && cur.Rank() == 0 {
				fmt.Printf("round %d: recovered on %d ranks (world %v), %d tasks left\n",
					round, cur.Size(), ftkit.Members(cur), countZero(table))
			}
			recovered = false
			if !slices.Contains(table, 0) {
				break
			}
			compute = true
			continue
		}
		// A rank was lost. Stop the others, wherever they wait, and go on
		// among the survivors, first merging tables again (this rank's
		// own results of the failed round included; a rank whose
		// Allreduce worked keeps the merged table it got).
		if err := cur.Revoke(); err != nil {
			return err
		}
		if ok == 1 {
			copy(table, merged)
		}
		d, err := cur.Shrink(ctx)
		if err != nil {
			return fmt.Errorf("round %d: shrinking after a loss: %w", round, err)
		}
		if cur != world {
			cur.Close()
		}
		cur, compute, recovered = d, false, true
		if shrinks++; shrinks == 1 && slices.Contains(cfg.recoveryVictims, world.Rank()) {
			syscall.Kill(os.Getpid(), syscall.SIGKILL) // the others are about to merge tables with this rank
		}
	}
	if cur.Rank() == 0 {
		var total, want uint64
		for i, v := range table {
			total += v
			want += task(i, cfg.work)
		}
		var lostRanks []int
		for r := range world.Size() {
			if !slices.ContainsFunc(ftkit.Members(cur), func(w int) bool { return w == r }) {
				lostRanks = append(lostRanks, r)
			}
		}
		fmt.Printf("total = %d (expected %d), lost ranks %v, survivors %d\n", total, want, lostRanks, cur.Size())
		if total != want {
			return fmt.Errorf("total %d, want %d", total, want)
		}
	}
	return nil
}

// countZero returns how many tasks of table are not finished.
func countZero(table []uint64) int {
	n := 0
	for _, v := range table {
		if v == 0 {
			n++
		}
	}
	return n
}
