// Package coll holds commtune's collective algorithms (seed 001 §3): for
// each operation, families of algorithms — tree shapes, segment sizes for
// pipelining, the exchange patterns of allreduce, allgather and alltoall —
// each written as a pure description of who sends what to whom in which
// round (a Schedule), and one small Engine that carries a schedule out over
// point-to-point messages. Schedules do no I/O, so they are checked
// exhaustively in memory (Simulate) and timed and chosen elsewhere.
package coll

import (
	"errors"
	"fmt"
)

// Buf names a buffer a step refers to.
type Buf uint8

const (
	In  Buf = iota // the caller's input: the send buffer
	Out            // the caller's output: the receive buffer
	Tmp            // scratch of Schedule.TmpSize bytes
)

func (b Buf) String() string { return [...]string{"in", "out", "tmp"}[b] }

// Kind is what a step does.
type Kind uint8

const (
	Send   Kind = iota // send Buf[Off:Off+Len] to Peer
	Recv               // receive Len bytes from Peer into Buf[Off:]
	Reduce             // Buf[Off:Off+Len] = Buf ⊕ From, or From ⊕ Buf (FromFirst)
	Copy               // Buf[Off:Off+Len] = From[FromOff:FromOff+Len]
)

func (k Kind) String() string { return [...]string{"send", "recv", "reduce", "copy"}[k] }

// Step is one action of one rank.
type Step struct {
	Kind     Kind
	Peer     int // Send, Recv: a rank of the communicator
	Buf      Buf
	Off, Len int // bytes
	From     Buf // Reduce, Copy: the source
	FromOff  int
	// FromFirst: the source holds lower ranks' contribution, so it is the
	// left operand (what a non-commutative reduction needs).
	FromFirst bool
}

func (s Step) String() string {
	switch s.Kind {
	case Send, Recv:
		return fmt.Sprintf("%s %s[%d:+%d] peer %d", s.Kind, s.Buf, s.Off, s.Len, s.Peer)
	}
	return fmt.Sprintf("%s %s[%d:+%d] from %s[%d] first=%v", s.Kind, s.Buf, s.Off, s.Len, s.From, s.FromOff, s.FromFirst)
}

// Schedule is one rank's part of a collective: rounds of steps. In each
// round the rank posts every Recv, then every Send, waits for all of them,
// then applies the round's Reduce and Copy steps in order. A step's buffer
// region is not touched by another step of the same round while a message
// moves it.
type Schedule struct {
	Rounds  [][]Step
	TmpSize int
	// Pull asks that receivers read the sends in place (Algorithm.Pull).
	Pull bool
}

// add appends steps to round r, growing the rounds as needed.
func (s *Schedule) add(r int, steps ...Step) {
	for len(s.Rounds) <= r {
		s.Rounds = append(s.Rounds, nil)
	}
	s.Rounds[r] = append(s.Rounds[r], steps...)
}

// next returns the index of a new round at the end.
func (s *Schedule) next() int { return len(s.Rounds) }

// Layout describes the data of one call.
type Layout struct {
	Size int // ranks in the communicator
	Rank int // this rank
	Root int // rooted operations
	// Bytes per rank: the whole vector for bcast and the reductions
	// (reduce, allreduce, reduce-scatter, scan, exscan), one block for
	// scatter, gather, allgather and alltoall.
	Bytes int
	Elem  int // element size: segments and blocks split on element boundaries
	// Counts and Displs give, in elements, each rank's block of a v-variant
	// (Scatterv, Gatherv, Allgatherv: one block per rank; Alltoallv: see
	// SendCounts etc.). ReduceScatter has Counts alone: rank r's block of
	// the vector is the Counts[r] elements after those of the ranks below,
	// and Bytes is their sum. ReduceScatterBlock has none: Size blocks of
	// Bytes/Size.
	Counts, Displs []int
	// Alltoallv: what this rank sends to and receives from each rank.
	SendCounts, SendDispls, RecvCounts, RecvDispls []int
}

// ErrNotCommutative is returned when an algorithm that reorders
// contributions is asked to reduce with a non-commutative operation.
var ErrNotCommutative = errors.New("the algorithm needs a commutative operation")

// segments splits n bytes into pieces of at most seg bytes on elem
// boundaries (seg 0: one piece). A zero-length message is one empty piece,
// so every algorithm still sends one message per edge (it synchronizes,
// and a receive of zero bytes still completes).
func segments(n, seg, elem int) [][2]int {
	if seg <= 0 || seg >= n {
		return [][2]int{{0, n}}
	}
	seg = max(seg/elem*elem, elem)
	var out [][2]int
	for off := 0; off < n; off += seg {
		out = append(out, [2]int{off, min(seg, n-off)})
	}
	return out
}
