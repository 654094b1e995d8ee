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
}

// Exchanger carries out one round's messages over point-to-point: it
// posts every receive, then every send, and returns once all have
// completed. A receive that gets other than len(Buf) bytes is an error.
// Messages between two ranks must match in the order they are posted.
type Exchanger interface {
	Exchange(ctx context.Context, recvs, sends []Msg) error
}

// Run carries out s with this rank's in and out buffers: for each round
// it exchanges the round's messages, then applies its Reduce and Copy steps
// in order. reduce may be nil for schedules without Reduce steps.
func Run(ctx context.Context, x Exchanger, s Schedule, in, out []byte, reduce Reducer) error {
	var tmp []byte
	if s.TmpSize > 0 {
		tmp = getTmp(s.TmpSize)
		defer putTmp(tmp)
	}
	bufs := [3][]byte{In: in, Out: out, Tmp: tmp}
	region := func(b Buf, off, n int, st Step) ([]byte, error) {
		buf := bufs[b]
		if off < 0 || n < 0 || off+n > len(buf) {
			return nil, fmt.Errorf("coll: %v outside %s (%d bytes)", st, b, len(buf))
		}
		return buf[off : off+n], nil
	}
	var recvs, sends []Msg
	for _, round := range s.Rounds {
		recvs, sends = recvs[:0], sends[:0]
		for _, st := range round {
			switch st.Kind {
			case Send, Recv:
				b, err := region(st.Buf, st.Off, st.Len, st)
				if err != nil {
					return err
				}
				if st.Kind == Send {
					sends = append(sends, Msg{st.Peer, b})
				} else {
					recvs = append(recvs, Msg{st.Peer, b})
				}
			}
		}
		if len(recvs)+len(sends) > 0 {
			if err := x.Exchange(ctx, recvs, sends); err != nil {
				return err
			}
		}
		for _, st := range round {
			if st.Kind != Reduce && st.Kind != Copy {
				continue
			}
			dst, err := region(st.Buf, st.Off, st.Len, st)
			if err != nil {
				return err
			}
			src, err := region(st.From, st.FromOff, st.Len, st)
			if err != nil {
				return err
			}
			if st.Kind == Copy {
				copy(dst, src)
			} else if reduce == nil {
				return fmt.Errorf("coll: %v with no reduction operation", st)
			} else {
				reduce(dst, src, st.FromFirst)
			}
		}
	}
	return nil
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

func getTmp(n int) []byte {
	c := sizeClass(n)
	if p, ok := tmpPools[c].Get().(*[]uint64); ok {
		return words(*p)[:n]
	}
	return words(make([]uint64, 1<<c))[:n]
}

func putTmp(b []byte) {
	c := sizeClass(cap(b))
	w := wordsOf(b[:cap(b)])
	tmpPools[c].Put(&w)
}
