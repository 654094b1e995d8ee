package halo

import (
	"errors"
	"fmt"
)

// ProcNull is the rank Neighbors returns where there is no neighbour: past
// an open border of the process grid. Plans leave such directions out, and
// the halo there keeps whatever it held.
const ProcNull = -1

// Neighbors returns the rank at offset o from this rank on the process
// grid, or ProcNull. Periodic wrap-around is the caller's: with a periodic
// dimension of size 1 or 2 one rank, even this rank itself, can be the
// neighbour in several directions, and plans stay correct because every
// direction has its own tag.
type Neighbors func(o []int) int

// Transfer is one message each way between this rank and Peer: send the
// Send box to Peer under SendTag, and receive from Peer into the Recv box
// the message Peer sent under RecvTag. The tag of a message is the
// DirectionIndex of the direction it travels in, so messages between the
// same two ranks in different directions never match each other; the
// receiver of a message from offset p expects the tag of −p. Peer may be
// this rank (a periodic dimension of size 1): the transfer stays in the
// plan and the executor copies the box locally.
type Transfer struct {
	Peer             int
	Send, Recv       Box
	SendTag, RecvTag int
}

// Phase is the transfers one rank carries out concurrently; a phase starts
// after the previous one has completed, because it may send what that one
// received.
type Phase struct {
	Transfers []Transfer
}

// Plan is everything one rank does in one halo exchange.
type Plan struct {
	Phases []Phase
}

// PlanAll returns the all-at-once plan: a single phase with a transfer for
// each of the 3^N−1 directions that has a neighbour, in Directions order.
func PlanAll(s Shape, nb Neighbors) (Plan, error) {
	if err := checkPlanArgs(s, nb); err != nil {
		return Plan{}, err
	}
	var ph Phase
	for _, o := range Directions(len(s.Extents)) {
		send, err := SendBoxAll(s, o)
		if err != nil {
			return Plan{}, err
		}
		recv, err := RecvBoxAll(s, o)
		if err != nil {
			return Plan{}, err
		}
		if err := addTransfer(&ph, o, nb, send, recv); err != nil {
			return Plan{}, err
		}
	}
	return Plan{Phases: []Phase{ph}}, nil
}

// PlanPhased returns the dimension-ordered plan: N phases, phase d with the
// transfers towards −e_d and +e_d that have a neighbour, their boxes
// (SendBoxPhased, RecvBoxPhased) reaching into the halo of an earlier
// dimension only on the sides where nb has a neighbour, so that the halo
// past an open border is neither sent nor overwritten. Every phase is
// present even if empty, so phase d of every rank's plan concerns the same
// dimension.
func PlanPhased(s Shape, nb Neighbors) (Plan, error) {
	if err := checkPlanArgs(s, nb); err != nil {
		return Plan{}, err
	}
	n := len(s.Extents)
	p := Plan{Phases: make([]Phase, n)}
	for d := range n {
		for _, sign := range [2]int{-1, 1} {
			send, err := SendBoxPhased(s, d, sign, nb)
			if err != nil {
				return Plan{}, err
			}
			recv, err := RecvBoxPhased(s, d, sign, nb)
			if err != nil {
				return Plan{}, err
			}
			o := make([]int, n)
			o[d] = sign
			if err := addTransfer(&p.Phases[d], o, nb, send, recv); err != nil {
				return Plan{}, err
			}
		}
	}
	return p, nil
}

func checkPlanArgs(s Shape, nb Neighbors) error {
	if err := s.Validate(); err != nil {
		return err
	}
	if nb == nil {
		return errors.New("halo: no neighbour function")
	}
	return nil
}

// addTransfer appends to ph the transfer with the neighbour at offset o,
// unless there is none.
func addTransfer(ph *Phase, o []int, nb Neighbors, send, recv Box) error {
	peer := nb(append([]int(nil), o...)) // the caller may keep or alter its argument
	if peer == ProcNull {
		return nil
	}
	if peer < 0 {
		return fmt.Errorf("halo: neighbour at offset %v is rank %d, want ≥ 0 or ProcNull", o, peer)
	}
	neg := make([]int, len(o))
	for d, x := range o {
		neg[d] = -x
	}
	sendTag, err := DirectionIndex(o)
	if err != nil {
		return err
	}
	recvTag, err := DirectionIndex(neg)
	if err != nil {
		return err
	}
	ph.Transfers = append(ph.Transfers, Transfer{Peer: peer, Send: send, Recv: recv, SendTag: sendTag, RecvTag: recvTag})
	return nil
}
