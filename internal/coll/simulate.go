package coll

import (
	"fmt"
	"strings"
)

// Reducer combines src into dst, element by element: dst = dst ⊕ src, or
// dst = src ⊕ dst when srcFirst (src holds the lower ranks'
// contribution). dst and src have the same length, a whole number of
// elements.
type Reducer func(dst, src []byte, srcFirst bool)

// Simulate runs the schedules of every rank (scheds[r] is rank r's) in
// memory, with rank r's input in[r] and output out[r], and reports the
// first way they fail to fit: a message whose sizes disagree, a step out of
// a buffer's bounds, or ranks waiting on each other forever. A rank leaves
// a round once every receive it posted has found its send and every send
// its receive — the same condition under which the Engine's wait returns
// whether the messages go eagerly or by rendezvous — and messages between
// two ranks match in the order they were posted, as point-to-point
// messages of one tag do.
func Simulate(scheds []Schedule, in, out [][]byte, reduce Reducer) error {
	n := len(scheds)
	type post struct {
		rank, round, step int
		data              []byte // a send's bytes, taken when posted
	}
	sends := make(map[[2]int][]*post) // (from, to) → sends in posting order
	recvs := make(map[[2]int][]*post) // (from, to) → receives in posting order
	tmp := make([][]byte, n)
	bufOf := func(r int, b Buf) []byte {
		switch b {
		case In:
			return in[r]
		case Out:
			return out[r]
		}
		return tmp[r]
	}
	region := func(r int, b Buf, off, l int, st Step) ([]byte, error) {
		buf := bufOf(r, b)
		if off < 0 || l < 0 || off+l > len(buf) {
			return nil, fmt.Errorf("rank %d: %v: outside %s (%d bytes)", r, st, b, len(buf))
		}
		return buf[off : off+l], nil
	}
	round := make([]int, n)
	entered := make([]bool, n)
	// index of each posted operation in its pair's list
	sendIdx := make([]map[int]int, n)
	recvIdx := make([]map[int]int, n)
	for r := range scheds {
		tmp[r] = make([]byte, scheds[r].TmpSize)
	}
	enter := func(r int) error {
		if round[r] >= len(scheds[r].Rounds) {
			return nil
		}
		sendIdx[r], recvIdx[r] = map[int]int{}, map[int]int{}
		if err := checkRound(r, scheds[r].Rounds[round[r]]); err != nil {
			return err
		}
		for i, st := range scheds[r].Rounds[round[r]] {
			switch st.Kind {
			case Send:
				b, err := region(r, st.Buf, st.Off, st.Len, st)
				if err != nil {
					return err
				}
				if st.Peer < 0 || st.Peer >= n || st.Peer == r {
					return fmt.Errorf("rank %d: %v: bad peer", r, st)
				}
				key := [2]int{r, st.Peer}
				sendIdx[r][i] = len(sends[key])
				sends[key] = append(sends[key], &post{r, round[r], i, append([]byte(nil), b...)})
			case Recv:
				if _, err := region(r, st.Buf, st.Off, st.Len, st); err != nil {
					return err
				}
				if st.Peer < 0 || st.Peer >= n || st.Peer == r {
					return fmt.Errorf("rank %d: %v: bad peer", r, st)
				}
				key := [2]int{st.Peer, r}
				recvIdx[r][i] = len(recvs[key])
				recvs[key] = append(recvs[key], &post{rank: r, round: round[r], step: i})
			}
		}
		entered[r] = true
		return nil
	}
	// ready reports whether rank r's current round can complete.
	ready := func(r int) (bool, error) {
		for i, st := range scheds[r].Rounds[round[r]] {
			switch st.Kind {
			case Send:
				key := [2]int{r, st.Peer}
				k := sendIdx[r][i]
				if len(recvs[key]) <= k {
					return false, nil
				}
				if want := scheds[st.Peer].Rounds[recvs[key][k].round][recvs[key][k].step].Len; want != st.Len {
					return false, fmt.Errorf("rank %d sends %d bytes to rank %d, which receives %d", r, st.Len, st.Peer, want)
				}
			case Recv:
				key := [2]int{st.Peer, r}
				if len(sends[key]) <= recvIdx[r][i] {
					return false, nil
				}
			}
		}
		return true, nil
	}
	finish := func(r int) error {
		for i, st := range scheds[r].Rounds[round[r]] {
			switch st.Kind {
			case Recv:
				key := [2]int{st.Peer, r}
				dst, _ := region(r, st.Buf, st.Off, st.Len, st)
				copy(dst, sends[key][recvIdx[r][i]].data)
			}
		}
		for _, st := range scheds[r].Rounds[round[r]] {
			switch st.Kind {
			case Reduce, Copy:
				dst, err := region(r, st.Buf, st.Off, st.Len, st)
				if err != nil {
					return err
				}
				src, err := region(r, st.From, st.FromOff, st.Len, st)
				if err != nil {
					return err
				}
				if st.Kind == Copy {
					copy(dst, src)
				} else {
					reduce(dst, append([]byte(nil), src...), st.FromFirst)
				}
			}
		}
		round[r]++
		entered[r] = false
		return nil
	}
	for {
		progress, done := false, true
		for r := 0; r < n; r++ {
			if round[r] >= len(scheds[r].Rounds) {
				continue
			}
			done = false
			if !entered[r] {
				if err := enter(r); err != nil {
					return err
				}
				progress = true
			}
			ok, err := ready(r)
			if err != nil {
				return err
			}
			if ok {
				if err := finish(r); err != nil {
					return err
				}
				progress = true
			}
		}
		if done {
			break
		}
		if !progress {
			var stuck []string
			for r := 0; r < n; r++ {
				if round[r] < len(scheds[r].Rounds) {
					stuck = append(stuck, fmt.Sprintf("rank %d in round %d of %d", r, round[r], len(scheds[r].Rounds)))
				}
			}
			return fmt.Errorf("deadlock: %s", strings.Join(stuck, ", "))
		}
	}
	for key, ss := range sends {
		if len(recvs[key]) != len(ss) {
			return fmt.Errorf("rank %d sent %d messages to rank %d, which received %d", key[0], len(ss), key[1], len(recvs[key]))
		}
	}
	return nil
}

// checkRound verifies what Schedule promises of a round: nothing writes
// the caller's In, and a receive's region overlaps no other message's
// region of the round (the data would depend on which lands first).
func checkRound(r int, steps []Step) error {
	for i, a := range steps {
		if a.Buf == In && a.Kind != Send {
			return fmt.Errorf("rank %d: %v writes the input buffer", r, a)
		}
		if a.Kind != Recv || a.Len == 0 {
			continue
		}
		for j, b := range steps {
			if j == i || (b.Kind != Send && b.Kind != Recv) || b.Buf != a.Buf || b.Len == 0 {
				continue
			}
			if a.Off < b.Off+b.Len && b.Off < a.Off+a.Len {
				return fmt.Errorf("rank %d: %v overlaps %v in the same round", r, a, b)
			}
		}
	}
	return nil
}
