package conformance

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/commtune/commtune"
	"github.com/commtune/commtune/internal/coll"
)

// A recovery job: victims die at a chosen moment of a phase — inside a
// collective, a rendezvous, a halo exchange, or Shrink and Agree
// themselves — and the survivors recover as a ULFM program does: revoke,
// shrink, run the whole collective matrix on the new communicator, agree
// that it worked, and start over if it did not. Each survivor reports what
// it saw (RecoveryReport); the test compares the reports of a job's
// survivors, which must be identical.

// RecoveryPhases are the moments a recovery job kills its victims in.
var RecoveryPhases = []string{"allreduce", "rendezvous", "halo", "shrink", "agree"}

// RecoveryPlan is one recovery job.
type RecoveryPlan struct {
	Phase   string        // one of RecoveryPhases
	Victims []int         // ranks of the world that die
	Delay   time.Duration // how long after the phase starts they die
}

// String is the plan as ParseRecoveryPlan reads it: "phase/1,3/12ms".
func (p RecoveryPlan) String() string {
	vs := make([]string, len(p.Victims))
	for i, v := range p.Victims {
		vs[i] = strconv.Itoa(v)
	}
	return p.Phase + "/" + strings.Join(vs, ",") + "/" + p.Delay.String()
}

// ParseRecoveryPlan reads what RecoveryPlan.String wrote.
func ParseRecoveryPlan(s string) (RecoveryPlan, error) {
	f := strings.Split(s, "/")
	if len(f) != 3 || !slices.Contains(RecoveryPhases, f[0]) {
		return RecoveryPlan{}, fmt.Errorf("recovery plan %q: want phase/victims/delay", s)
	}
	p := RecoveryPlan{Phase: f[0]}
	for _, v := range strings.Split(f[1], ",") {
		r, err := strconv.Atoi(v)
		if err != nil || r < 0 {
			return RecoveryPlan{}, fmt.Errorf("recovery plan %q: victim %q", s, v)
		}
		p.Victims = append(p.Victims, r)
	}
	d, err := time.ParseDuration(f[2])
	if err != nil || d < 0 {
		return RecoveryPlan{}, fmt.Errorf("recovery plan %q: delay %q", s, f[2])
	}
	p.Delay = d
	return p, nil
}

// RecoveryReport is what one survivor saw. Every field but Rank and Done
// must be the same on every survivor of a job.
type RecoveryReport struct {
	Rank    int
	Shrinks []string  // phase shrink: the members of each Shrink's communicator
	Agrees  []string  // phase agree: each Agree's value and failed ranks
	Tries   int       // shrinks the recovery took
	Final   []int     // world ranks of the communicator it ended on
	Calls   int       // collective calls of the matrix on it
	Done    time.Time // when the Shrink that made that communicator returned
}

// String is the report on one line, as ParseRecoveryReport reads it.
func (r RecoveryReport) String() string {
	return fmt.Sprintf("recovery rank %d: final %v tries %d calls %d shrinks %s agrees %s done %d",
		r.Rank, r.Final, r.Tries, r.Calls, strings.Join(r.Shrinks, ";"), strings.Join(r.Agrees, ";"), r.Done.UnixNano())
}

// Same returns what must agree between survivors: the report without its
// rank and time.
func (r RecoveryReport) Same() string {
	return fmt.Sprintf("final %v tries %d calls %d shrinks %s agrees %s", r.Final, r.Tries, r.Calls,
		strings.Join(r.Shrinks, ";"), strings.Join(r.Agrees, ";"))
}

// recoveryMatrix is the collective matrix a recovered communicator runs:
// every operation and unsegmented family, at a few sizes, rooted at the
// first and last rank.
var recoveryMatrix = CollectiveMatrix{
	Ops: CollectiveOps,
	Algorithms: func(op coll.Operation) []coll.Algorithm {
		var out []coll.Algorithm
		for _, a := range coll.Algorithms(op) {
			if a.Segment == 0 {
				out = append(out, a)
			}
		}
		return out
	},
	Roots:  func(n int) []int { return []int{0, n - 1} },
	Counts: []int{1, 1024},
}

// Recover runs plan on c. A victim calls crash (which must not return
// for a process; a goroutine rank's returns, and its calls fail after);
// a survivor returns its report.
func Recover(ctx context.Context, c *commtune.Comm, plan RecoveryPlan, crash func()) (RecoveryReport, error) {
	rep := RecoveryReport{Rank: c.Rank()}
	victim := slices.Contains(plan.Victims, c.Rank())
	step, on, err := recoveryStep(c, plan.Phase)
	if err != nil {
		return rep, err
	}
	if err := c.Barrier(ctx); err != nil {
		return rep, err
	}
	crashed := make(chan struct{})
	if victim {
		go func() {
			time.Sleep(plan.Delay)
			crash()
			close(crashed)
		}()
	}
	switch plan.Phase {
	case "shrink":
		err = shrinkUntilGone(ctx, c, plan, &rep)
	case "agree":
		err = agreeUntilGone(ctx, c, plan, &rep)
	default:
		for err == nil {
			err = step(ctx)
		}
	}
	if victim {
		<-crashed // a process never gets here; a goroutine rank's calls fail once it crashed
		return rep, nil
	}
	if err != nil && !errors.Is(err, commtune.ErrPeerLost) && !errors.Is(err, commtune.ErrRevoked) {
		return rep, fmt.Errorf("%s phase ended with %v, want ErrPeerLost or ErrRevoked", plan.Phase, err)
	}
	// The communicator the phase ran on first: its members that wait in
	// it for a member that moved on must stop too.
	if err := on.Revoke(); err != nil {
		return rep, err
	}
	if err := c.Revoke(); err != nil {
		return rep, err
	}
	cur := c
	for rep.Tries = 1; ; rep.Tries++ {
		if rep.Tries > 10 {
			return rep, fmt.Errorf("no working communicator after %d shrinks", rep.Tries-1)
		}
		d, err := cur.Shrink(ctx)
		if err != nil {
			return rep, err
		}
		shrunk := time.Now()
		calls, merr := CheckCollectives(ctx, d, recoveryMatrix)
		ok := uint64(1)
		if merr != nil {
			ok = 0
		}
		v, aerr := d.Agree(ctx, ok)
		if aerr == nil && v == 1 {
			rep.Calls = calls
			for r := range d.Size() {
				rep.Final = append(rep.Final, d.WorldRank(r))
			}
			rep.Done = shrunk
			return rep, d.Close()
		}
		var fe *commtune.FailedRanksError
		if aerr != nil && !errors.As(aerr, &fe) {
			return rep, aerr
		}
		d.Revoke()
		cur = d
	}
}

// recoveryStep returns one call of a phase that loops over a call, and the
// communicator it runs on.
func recoveryStep(c *commtune.Comm, phase string) (func(context.Context) error, *commtune.Comm, error) {
	n := c.Size()
	switch phase {
	case "allreduce":
		sizes := []int{1, 8 << 10, 128 << 10} // float64s: eager, segmented, rendezvous
		k := 0
		return func(ctx context.Context) error {
			k++
			m := sizes[k%len(sizes)]
			send, recv := make([]float64, m), make([]float64, m)
			return commtune.Allreduce(ctx, c, send, recv, commtune.Sum)
		}, c, nil
	case "rendezvous":
		out, in := make([]byte, 4<<20), make([]byte, 4<<20)
		next, prev := (c.Rank()+1)%n, (c.Rank()+n-1)%n
		return func(ctx context.Context) error {
			_, err := c.Sendrecv(ctx, out, next, 1, in, prev, 1)
			return err
		}, c, nil
	case "halo":
		dims := make([]int, 2)
		if err := commtune.DimsCreate(n, dims); err != nil {
			return nil, nil, err
		}
		cart, err := c.Cart(dims, []bool{true, true})
		if err != nil {
			return nil, nil, err
		}
		side := 512
		data := make([]float64, (side+2)*(side+2))
		h, err := commtune.NewHalo(cart, data, []int{side, side}, 1, 1)
		if err != nil {
			return nil, nil, err
		}
		return h.Exchange, cart.Comm(), nil
	case "shrink", "agree":
		return nil, c, nil
	}
	return nil, nil, fmt.Errorf("unknown recovery phase %q", phase)
}

// shrinkUntilGone shrinks c over and over until a Shrink leaves every
// victim out, recording the members of each new communicator.
func shrinkUntilGone(ctx context.Context, c *commtune.Comm, plan RecoveryPlan, rep *RecoveryReport) error {
	for range 100000 {
		d, err := c.Shrink(ctx)
		if err != nil {
			return err
		}
		var members []string
		for r := range d.Size() {
			members = append(members, strconv.Itoa(d.WorldRank(r)))
		}
		rep.Shrinks = append(rep.Shrinks, strings.Join(members, ","))
		d.Close()
		if d.Size() == c.Size()-len(plan.Victims) {
			return nil
		}
	}
	return fmt.Errorf("victims still in Shrink's communicator after 100000 calls")
}

// agreeUntilGone agrees over and over, each rank bringing a flag of its
// own, until an Agree names every victim failed, recording each result.
func agreeUntilGone(ctx context.Context, c *commtune.Comm, plan RecoveryPlan, rep *RecoveryReport) error {
	flag := ^uint64(0) &^ (1 << (c.Rank() % 64))
	for range 100000 {
		v, err := c.Agree(ctx, flag)
		var fe *commtune.FailedRanksError
		switch {
		case err == nil:
			rep.Agrees = append(rep.Agrees, fmt.Sprintf("%x", v))
		case errors.As(err, &fe):
			rep.Agrees = append(rep.Agrees, fmt.Sprintf("%x/%v", v, fe.Ranks))
			if len(fe.Ranks) == len(plan.Victims) {
				return nil
			}
		default:
			return err
		}
	}
	return fmt.Errorf("victims not reported failed by Agree after 100000 calls")
}
