package halo

import (
	"errors"
	"fmt"
	"strings"
)

// Simulate carries out the halo exchange of every rank of a process grid in
// memory. The grid has dims[d] ranks along dimension d, numbered row-major
// (the last dimension fastest, as MPI_Cart_create does), and wraps around
// along the dimensions where periods[d]. Each rank's array, arrays[rank],
// has shape s; plan returns the plan of a rank given its neighbour
// function. The exchange happens in place; after an error the arrays are
// partly exchanged.
//
// Phases run in lockstep: in each, every rank first packs all its send
// boxes, then every rank unpacks the messages addressed to it, each
// matched by (sender, receiver, tag). Simulate reports the first way the
// plans fail to fit: a receive nobody sends to (and so, as every transfer
// both sends and receives, a message nobody receives), two messages or
// two receives under one (sender, receiver, tag), a size mismatch, a peer
// or box outside the grid or array, or, within one rank's phase, a receive
// box overlapping another receive or a send box — an executor posts all of
// a phase's receives and sends at once, so an overlap would make the
// result depend on timing.
func Simulate(dims []int, periods []bool, s Shape, arrays [][]byte, plan func(rank int, nb Neighbors) (Plan, error)) error {
	if err := checkGrid(dims, periods, s, arrays); err != nil {
		return err
	}
	if plan == nil {
		return errors.New("halo: no plan function")
	}
	plans := make([]Plan, len(arrays))
	phases := 0
	for r := range arrays {
		p, err := plan(r, gridNeighbors(dims, periods, r))
		if err != nil {
			return wrapf(err, "plan of rank %d", r)
		}
		plans[r] = p
		phases = max(phases, len(p.Phases))
	}
	for ph := range phases {
		phase := make([][]Transfer, len(plans))
		for r, p := range plans {
			if ph < len(p.Phases) {
				phase[r] = p.Phases[ph].Transfers
			}
		}
		if err := simulatePhase(s, arrays, phase); err != nil {
			return wrapf(err, "phase %d", ph)
		}
	}
	return nil
}

// simulatePhase carries out one phase, phase[r] being rank r's transfers.
func simulatePhase(s Shape, arrays [][]byte, phase [][]Transfer) error {
	type key struct{ from, to, tag int }
	sent := map[key][]byte{}
	recvRuns := make([][][]Run, len(phase))
	for r, ts := range phase {
		recvRuns[r] = make([][]Run, len(ts))
		sendRuns := make([][]Run, len(ts))
		for i, t := range ts {
			if t.Peer < 0 || t.Peer >= len(arrays) {
				return fmt.Errorf("rank %d sends to rank %d of %d", r, t.Peer, len(arrays))
			}
			var err error
			if sendRuns[i], err = Runs(s, t.Send); err != nil {
				return wrapf(err, "rank %d, send box", r)
			}
			if recvRuns[r][i], err = Runs(s, t.Recv); err != nil {
				return wrapf(err, "rank %d, receive box", r)
			}
		}
		if err := checkOverlaps(ts); err != nil {
			return wrapf(err, "rank %d", r)
		}
		for i, t := range ts {
			k := key{r, t.Peer, t.SendTag}
			if _, dup := sent[k]; dup {
				return fmt.Errorf("rank %d sends rank %d two messages with tag %d", r, t.Peer, t.SendTag)
			}
			msg := make([]byte, RunsBytes(sendRuns[i]))
			if _, err := Pack(msg, arrays[r], sendRuns[i]); err != nil {
				return err
			}
			sent[k] = msg
		}
	}
	received := map[key]bool{}
	for r, ts := range phase {
		for i, t := range ts {
			k := key{t.Peer, r, t.RecvTag}
			msg, ok := sent[k]
			if !ok {
				return fmt.Errorf("rank %d waits for a message from rank %d with tag %d that is never sent", r, t.Peer, t.RecvTag)
			}
			if received[k] {
				return fmt.Errorf("rank %d receives the message from rank %d with tag %d twice", r, t.Peer, t.RecvTag)
			}
			received[k] = true
			runs := recvRuns[r][i]
			if n := RunsBytes(runs); n != len(msg) {
				return fmt.Errorf("rank %d receives %d bytes into a %d-byte box from rank %d with tag %d", r, len(msg), n, t.Peer, t.RecvTag)
			}
			if _, err := Unpack(arrays[r], msg, runs); err != nil {
				return err
			}
		}
	}
	// Every transfer sends one message and receives one, so with each
	// receive matched to a distinct message none is left over.
	return nil
}

func checkGrid(dims []int, periods []bool, s Shape, arrays [][]byte) error {
	if err := s.Validate(); err != nil {
		return err
	}
	if len(dims) != len(s.Extents) || len(periods) != len(dims) {
		return fmt.Errorf("halo: grid of %d dimensions with %d periods for a %d-dimensional shape", len(dims), len(periods), len(s.Extents))
	}
	for d, n := range dims {
		if n < 1 {
			return fmt.Errorf("halo: grid has %d ranks in dimension %d, want ≥ 1", n, d)
		}
	}
	size := 1
	for _, n := range dims {
		// Stop before an overflow: the product must match len(arrays).
		if n > len(arrays)/size {
			return fmt.Errorf("halo: grid %v has more ranks than the %d arrays", dims, len(arrays))
		}
		size *= n
	}
	if size != len(arrays) {
		return fmt.Errorf("halo: grid %v has %d ranks, but there are %d arrays", dims, size, len(arrays))
	}
	for r, a := range arrays {
		if len(a) != s.Bytes() {
			return fmt.Errorf("halo: array of rank %d has %d bytes, want %d", r, len(a), s.Bytes())
		}
	}
	return nil
}

// gridNeighbors returns the neighbour function of rank on a Cartesian grid
// numbered row-major: ProcNull past an open border, and for an offset of
// the wrong length, which names no rank.
func gridNeighbors(dims []int, periods []bool, rank int) Neighbors {
	coord := make([]int, len(dims))
	for d, r := len(dims)-1, rank; d >= 0; d-- {
		coord[d] = r % dims[d]
		r /= dims[d]
	}
	return func(o []int) int {
		if len(o) != len(dims) {
			return ProcNull
		}
		r := 0
		for d, n := range dims {
			c := coord[d] + o[d]
			if c < 0 || c >= n {
				if !periods[d] {
					return ProcNull
				}
				c = ((c % n) + n) % n
			}
			r = r*n + c
		}
		return r
	}
}

// checkOverlaps reports a receive box of one phase that overlaps another
// receive box or a send box.
func checkOverlaps(ts []Transfer) error {
	for i, t := range ts {
		for j, u := range ts {
			if j < i && overlap(t.Recv, u.Recv) {
				return fmt.Errorf("receive boxes %v and %v overlap", u.Recv, t.Recv)
			}
			if overlap(t.Recv, u.Send) {
				return fmt.Errorf("receive box %v overlaps send box %v", t.Recv, u.Send)
			}
		}
	}
	return nil
}

// overlap reports whether two boxes share a cell; malformed boxes are left
// for Runs to report.
func overlap(a, b Box) bool {
	n := len(a.Start)
	if len(a.Count) != n || len(b.Start) != n || len(b.Count) != n {
		return false
	}
	for d := range n {
		if a.Count[d] <= 0 || b.Count[d] <= 0 ||
			a.Start[d] >= b.Start[d]+b.Count[d] || b.Start[d] >= a.Start[d]+a.Count[d] {
			return false
		}
	}
	return true
}

// wrapError is an error with context in front, unwrapping to the original.
type wrapError struct {
	msg string
	err error
}

func (e *wrapError) Error() string { return e.msg }
func (e *wrapError) Unwrap() error { return e.err }

// wrapf puts context in front of err, keeping a single "halo: " prefix.
func wrapf(err error, format string, args ...any) error {
	msg := fmt.Sprintf("halo: "+format+": ", args...) + strings.TrimPrefix(err.Error(), "halo: ")
	return &wrapError{msg, err}
}
