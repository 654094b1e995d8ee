// Package ftkit holds what the examples that survive lost ranks share:
// the ranks a command line tells to die, how to tell an error a lost rank
// caused, and a communicator's members.
package ftkit

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/commtune/commtune"
)

// ParseRanks reads "3,5" into ranks; "" is none.
func ParseRanks(s string) ([]int, error) {
	var rs []int
	if s == "" {
		return rs, nil
	}
	for _, f := range strings.Split(s, ",") {
		r, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || r < 0 {
			return nil, fmt.Errorf("%q is not a rank", f)
		}
		rs = append(rs, r)
	}
	return rs, nil
}

// FormatRanks writes ranks as ParseRanks reads them.
func FormatRanks(ranks []int) string {
	return strings.Trim(strings.ReplaceAll(fmt.Sprint(ranks), " ", ","), "[]")
}

// Lost reports whether err comes from a lost rank: the peer itself, or a
// survivor's revocation after it.
func Lost(err error) bool {
	return errors.Is(err, commtune.ErrPeerLost) || errors.Is(err, commtune.ErrRevoked)
}

// Members returns the world ranks of c's members, in c's order.
func Members(c *commtune.Comm) []int {
	ws := make([]int, c.Size())
	for r := range ws {
		ws[r] = c.WorldRank(r)
	}
	return ws
}

// InitAndRun joins the job, checks that every rank the command line tells
// to die is one of its ranks, and runs run on the world communicator.
func InitAndRun(victims []int, run func(context.Context, *commtune.Comm) error) error {
	ctx := context.Background()
	world, err := commtune.Init(ctx)
	if err != nil {
		return err
	}
	defer world.Close()
	if i := slices.IndexFunc(victims, func(v int) bool { return v >= world.Size() }); i >= 0 {
		return fmt.Errorf("-kill %d: the job has %d ranks", victims[i], world.Size())
	}
	return run(ctx, world)
}
