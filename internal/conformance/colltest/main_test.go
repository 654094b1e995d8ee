package colltest

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/commtune/commtune"
	"github.com/commtune/commtune/internal/conformance"
)

// TestMain runs one rank of a job when the test binary is started as one
// (conformance.RunJob), else the tests.
func TestMain(m *testing.M) {
	programs := conformance.Programs()
	programs["coll"] = conformance.WithArg(collRank)
	conformance.RankMain(programs)
	os.Exit(m.Run())
}

// collRank checks processMatrix(which) and reports how many calls it made;
// on pretend nodes ("nodes"), the hierarchical barrier's wait too.
func collRank(ctx context.Context, c *commtune.Comm, which string) error {
	calls, err := conformance.CheckCollectives(ctx, c, processMatrix(which))
	fmt.Printf("rank %d: %d collective calls checked\n", c.Rank(), calls)
	if err == nil && strings.HasPrefix(which, "nodes") {
		err = checkBarrierWaits(ctx, c, "barrier/hierarchical")
	}
	if err == nil && strings.HasPrefix(which, "nodes") {
		err = checkChoices(ctx, c, which == "nodes-lottery")
	}
	return err
}

// checkChoices makes Allreduce calls whose algorithm nothing forces and
// checks their sums and who ran them: on ranks of several nodes, some
// holding two or more, the table takes the hierarchical algorithm for 8
// bytes and not for 4 KiB, and the lottery draws it among the others;
// with a rank per node, neither runs it.
func checkChoices(ctx context.Context, c *commtune.Comm, lottery bool) error {
	const hier = "allreduce/hierarchical"
	node, err := c.SplitShared(ctx)
	if err != nil {
		return err
	}
	most := []int{0}
	if err := commtune.Allreduce(ctx, c, []int{node.Size()}, most, commtune.Max); err != nil {
		return err
	}
	if most[0] == 1 {
		lottery = false // no candidate, nothing chosen: flat every time
	}
	spans := most[0] > 1 && most[0] < c.Size()
	for _, n := range []int{1, 512} {
		ran := map[string]int{}
		var ch commtune.CollChoice
		choice := commtune.WithChoice(&ch)
		send, recv := make([]float64, n), make([]float64, n)
		for call := range 300 {
			for i := range send {
				send[i] = float64(call*1000 + c.Rank()*10 + i)
			}
			if err := commtune.Allreduce(ctx, c, send, recv, commtune.Sum, choice); err != nil {
				return err
			}
			ran[ch.Algorithm]++
			p := float64(c.Size())
			for i, v := range recv {
				if want := p*float64(call*1000+i) + 10*p*(p-1)/2; v != want {
					return fmt.Errorf("allreduce of %d elements, call %d: element %d is %v, want %v (ran %v)", n, call, i, v, want, ran)
				}
			}
		}
		switch {
		case spans && lottery && n == 1 && ran[hier] == 0:
			return fmt.Errorf("the lottery never drew %s in 300 calls of 8 bytes: %v", hier, ran)
		case spans && !lottery && n == 1 && ran[hier] != 300:
			return fmt.Errorf("the table chose %v for 8 bytes on ranks of several nodes, want %s every time", ran, hier)
		case (n > 1 || !spans) && ran[hier] != 0:
			return fmt.Errorf("%s ran %d times for %d bytes, beyond what the node segment's slot holds or with a rank per node: %v", hier, ran[hier], 8*n, ran)
		}
	}
	return nil
}

// checkBarrierWaits has the last rank enter a barrier of algorithm alg
// late: no rank may leave it before that rank entered.
func checkBarrierWaits(ctx context.Context, c *commtune.Comm, alg string) error {
	const late = 200 * time.Millisecond
	for round := range 3 {
		if err := c.Barrier(ctx, commtune.WithAlgorithm(alg)); err != nil {
			return err
		}
		start := time.Now()
		if c.Rank() == c.Size()-1 {
			time.Sleep(late)
		}
		if err := c.Barrier(ctx, commtune.WithAlgorithm(alg)); err != nil {
			return err
		}
		// The ranks left the first barrier together, within a few
		// milliseconds: each must wait for the late one's sleep, less that.
		if waited := time.Since(start); waited < late-50*time.Millisecond {
			return fmt.Errorf("%s round %d: rank %d left after %v, before the last rank (late by %v) entered", alg, round, c.Rank(), waited, late)
		}
	}
	return nil
}
