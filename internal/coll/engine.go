package coll

import (
	"context"
	"fmt"
	"sync"
)

// Msg is one message of a round: Buf is sent whole to Peer, or filled
// whole from it.
type Msg struct {
	Peer int
	Buf  []byte
	// Pull asks that the receiver read Buf in place, where it can
	// (Schedule.Pull); receives ignore it.
	Pull bool
}

// Exchanger carries out one round's messages over point-to-point: it
// posts every receive, then every send, and returns once all have
// completed. A receive that gets other than len(Buf) bytes is an error.
// Messages between two ranks must match in the order they are posted.
type Exchanger interface {
	Exchange(ctx context.Context, recvs, sends []Msg) error
}

// Runner is the engine that carries out every schedule. It keeps the
// round's message lists from one call to the next, so that a caller
// running schedules over and over allocates nothing. The zero value is
// ready to use; a Runner runs one schedule at a time.
type Runner struct {
	recvs, sends []Msg
}

// Run carries out s with this rank's in and out buffers: for each round
// it exchanges the round's messages, then applies its Reduce and Copy steps
// in order. reduce may be nil for schedules without Reduce steps.
func (r *Runner) Run(ctx context.Context, x Exchanger, s *Schedule, in, out []byte, reduce Reducer) error {
	var tmp []byte
	if s.TmpSize > 0 {
		var back *[]uint64
		tmp, back = getTmp(s.TmpSize)
		defer tmpPools[sizeClass(s.TmpSize)].Put(back)
	}
	bufs := [3][]byte{In: in, Out: out, Tmp: tmp}
	for _, round := range s.Rounds {
		recvs, sends := r.recvs[:0], r.sends[:0]
		for _, st := range round {
			switch st.Kind {
			case Send, Recv:
				b, err := region(&bufs, st.Buf, st.Off, st.Len, st)
				if err != nil {
					return err
				}
				if st.Kind == Send {
					sends = append(sends, Msg{st.Peer, b, s.Pull})
				} else {
					recvs = append(recvs, Msg{Peer: st.Peer, Buf: b})
				}
			}
		}
		r.recvs, r.sends = recvs, sends
		if len(recvs)+len(sends) > 0 {
			if err := x.Exchange(ctx, recvs, sends); err != nil {
				return err
			}
		}
		for _, st := range round {
			if st.Kind != Reduce && st.Kind != Copy {
				continue
			}
			dst, err := region(&bufs, st.Buf, st.Off, st.Len, st)
			if err != nil {
				return err
			}
			src, err := region(&bufs, st.From, st.FromOff, st.Len, st)
			if err != nil {
				return err
			}
			if st.Kind == Copy {
				copyCached(dst, src)
			} else if reduce == nil {
				return fmt.Errorf("coll: %v with no reduction operation", st)
			} else {
				reduce(dst, src, st.FromFirst)
			}
		}
	}
	clear(r.recvs[:cap(r.recvs)]) // drop the caller's buffers
	clear(r.sends[:cap(r.sends)])
	return nil
}

// region returns bytes [off, off+n) of buffer b, or an error naming st.
func region(bufs *[3][]byte, b Buf, off, n int, st Step) ([]byte, error) {
	buf := bufs[b]
	if off < 0 || n < 0 || off+n > len(buf) {
		return nil, fmt.Errorf("coll: %v outside %s (%d bytes)", st, b, len(buf))
	}
	return buf[off : off+n], nil
}

// Scratch buffers come from pools by power-of-two size class, backed by
// []uint64 so that every element type's alignment holds at offsets that
// are multiples of its size. A large allreduce would otherwise allocate
// its vector's size on every call.
var tmpPools [48]sync.Pool

func sizeClass(n int) int {
	c := 0
	for 8<<c < n {
		c++
	}
	return c
}

// getTmp returns n bytes of scratch and what to hand back to its pool.
func getTmp(n int) ([]byte, *[]uint64) {
	c := sizeClass(n)
	p, ok := tmpPools[c].Get().(*[]uint64)
	if !ok {
		w := make([]uint64, 1<<c)
		p = &w
	}
	return words(*p)[:n], p
}
