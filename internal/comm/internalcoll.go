package comm

import (
	"context"
	"encoding/binary"
	"errors"

	"github.com/commtune/commtune/internal/core"
)

// Tags on a communicator's collective context used by the operations in
// this file.
const (
	tagAllgatherInts = 3 // apart from tagCollControl (collcheck.go) and tagCollSelect (collselect.go)
)

// allgatherInts gives every rank every rank's vals (all of the same
// length), in rank order. Communicator construction needs it; it sends
// directly to every rank, which is fine for the few ints Split exchanges.
func (c *Comm) allgatherInts(ctx context.Context, vals []int) ([][]int, error) {
	n := len(c.group)
	out := make([][]int, n)
	out[c.rank] = append([]int(nil), vals...)
	if n == 1 {
		return out, nil
	}
	payload := make([]byte, 8*len(vals))
	for i, v := range vals {
		binary.LittleEndian.PutUint64(payload[8*i:], uint64(int64(v)))
	}
	bufs := make([][]byte, n)
	var reqs []*core.Request
	for r := 0; r < n; r++ {
		if r == c.rank {
			continue
		}
		bufs[r] = make([]byte, len(payload))
		rr, err := c.irecv(bufs[r], r, tagAllgatherInts, c.collCtx)
		if err != nil {
			return nil, err
		}
		reqs = append(reqs, rr)
		sr, err := c.isend(payload, r, tagAllgatherInts, c.collCtx)
		if err != nil {
			return nil, err
		}
		reqs = append(reqs, sr)
	}
	var errs []error
	for _, r := range reqs {
		if _, err := r.Wait(ctx); err != nil {
			errs = append(errs, err)
			if ctx.Err() != nil {
				return nil, err
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	for r := 0; r < n; r++ {
		if r == c.rank {
			continue
		}
		out[r] = make([]int, len(vals))
		for i := range vals {
			out[r][i] = int(int64(binary.LittleEndian.Uint64(bufs[r][8*i:])))
		}
	}
	return out, nil
}
