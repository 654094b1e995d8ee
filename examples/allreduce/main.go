// Command allreduce checks a job end to end: each rank says which
// transport reaches every other rank, passes a message around the ring
// with Send/Recv, and sums a vector with Allreduce. It runs under any
// launcher commtune recognises:
//
//	go build -o /tmp/allreduce ./examples/allreduce
//	go run ./cmd/commtune run -n 4 -- /tmp/allreduce
//	mpiexec.mpich -n 4 /tmp/allreduce           # Hydra, PMI-1
//	srun -n 4 --mpi=pmi2 /tmp/allreduce         # Slurm, PMI-2
//
// It exits non-zero if a result is wrong.
package main

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/commtune/commtune"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "allreduce:", err)
		os.Exit(1)
	}
}

func run() error {
	ctx := context.Background()
	c, err := commtune.Init(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	me, n := c.Rank(), c.Size()
	byTransport := map[string][]string{}
	for r := 0; r < n; r++ {
		if r != me {
			t := c.Transport(r)
			byTransport[t] = append(byTransport[t], fmt.Sprint(r))
		}
	}
	var peers []string
	for t, rs := range byTransport {
		peers = append(peers, t+" to "+strings.Join(rs, ","))
	}
	sort.Strings(peers)
	host, _ := os.Hostname()
	// Ring: send my rank to the right, receive the left's.
	got := []int64{-1}
	if n > 1 {
		right, left := (me+1)%n, (me+n-1)%n
		req, err := commtune.IsendSlice(c, []int64{int64(me)}, right, 7)
		if err != nil {
			return err
		}
		if _, err := commtune.RecvSlice(ctx, c, got, left, 7); err != nil {
			return err
		}
		if _, err := req.Wait(ctx); err != nil {
			return err
		}
		if got[0] != int64(left) {
			return fmt.Errorf("rank %d received %d from rank %d", me, got[0], left)
		}
	}
	v := make([]float64, 1000)
	for i := range v {
		v[i] = float64(me + i)
	}
	sum := make([]float64, len(v))
	if err := commtune.Allreduce(ctx, c, v, sum, commtune.Sum); err != nil {
		return err
	}
	for i, x := range sum {
		if want := float64(n*i + n*(n-1)/2); x != want {
			return fmt.Errorf("rank %d: element %d of the sum is %v, want %v", me, i, x, want)
		}
	}
	fmt.Printf("rank %d of %d on %s: %s; ring ok; allreduce ok\n", me, n, host, strings.Join(peers, "; "))
	return nil
}
