package commtune

import (
	"context"
	"fmt"
)

// The collective forms of values: each rank's value is encoded on its own
// (as SendValue does), the sizes travel first, then the bytes by the
// byte collectives. Every rank must pass the same options.

// encodeOr wraps encodeValue's error with the call's name.
func encodeOr[T any](v T, cfg valueConfig, call string) ([]byte, error) {
	b, err := encodeValue(v, cfg)
	if err != nil {
		return nil, fmt.Errorf("commtune: %s: encoding a %T: %w", call, v, err)
	}
	return b, nil
}

// encodeEach encodes every value of vs, back to back, and returns the
// bytes and each one's size: the send of a scatter or an all-to-all.
func encodeEach[T any](vs []T, cfg valueConfig, call string) ([]byte, []int64, error) {
	var send []byte
	sizes := make([]int64, len(vs))
	for i, v := range vs {
		msg, err := encodeOr(v, cfg, call)
		if err != nil {
			return nil, nil, err
		}
		sizes[i] = int64(len(msg))
		send = append(send, msg...)
	}
	return send, sizes, nil
}

// BcastValue returns root's v on every rank (root's own v at root).
func BcastValue[T any](ctx context.Context, c *Comm, v T, root int, opts ...ValueOption) (T, error) {
	var zero T
	if err := c.checkRoot(root); err != nil {
		return zero, err
	}
	cfg := valueOptions(opts)
	var msg []byte
	if c.Rank() == root {
		var err error
		if msg, err = encodeOr(v, cfg, "BcastValue"); err != nil {
			return zero, err
		}
	}
	size := []int64{int64(len(msg))}
	if err := Bcast(ctx, c, size, root); err != nil {
		return zero, err
	}
	if c.Rank() != root {
		msg = make([]byte, size[0])
	}
	if err := Bcast(ctx, c, msg, root); err != nil {
		return zero, err
	}
	if c.Rank() == root {
		return v, nil
	}
	return decodeValue[T](msg, cfg, fmt.Sprintf("from rank %d in BcastValue", root))
}

// blocks returns the displacements of consecutive blocks of the given
// sizes, and their total.
func blocks(sizes []int64) (counts, displs []int, total int) {
	counts, displs = make([]int, len(sizes)), make([]int, len(sizes))
	for i, s := range sizes {
		counts[i], displs[i] = int(s), total
		total += int(s)
	}
	return counts, displs, total
}

// decodeBlocks decodes block r of buf (rank r's value) for every rank.
func decodeBlocks[T any](buf []byte, counts, displs []int, cfg valueConfig, call string) ([]T, error) {
	out := make([]T, len(counts))
	for r := range counts {
		v, err := decodeValue[T](buf[displs[r]:displs[r]+counts[r]], cfg, fmt.Sprintf("from rank %d in %s", r, call))
		if err != nil {
			return nil, err
		}
		out[r] = v
	}
	return out, nil
}

// GatherValues returns, at root, every rank's v in rank order; nil
// elsewhere.
func GatherValues[T any](ctx context.Context, c *Comm, v T, root int, opts ...ValueOption) ([]T, error) {
	if err := c.checkRoot(root); err != nil {
		return nil, err
	}
	cfg := valueOptions(opts)
	msg, err := encodeOr(v, cfg, "GatherValues")
	if err != nil {
		return nil, err
	}
	var sizes []int64
	if c.Rank() == root {
		sizes = make([]int64, c.Size())
	}
	if err := Gather(ctx, c, []int64{int64(len(msg))}, sizes, root); err != nil {
		return nil, err
	}
	var counts, displs []int
	var buf []byte
	if c.Rank() == root {
		var total int
		counts, displs, total = blocks(sizes)
		buf = make([]byte, total)
	}
	if err := Gatherv(ctx, c, msg, buf, counts, displs, root); err != nil {
		return nil, err
	}
	if c.Rank() != root {
		return nil, nil
	}
	return decodeBlocks[T](buf, counts, displs, cfg, "GatherValues")
}

// AllgatherValues returns every rank's v, in rank order, on every rank.
func AllgatherValues[T any](ctx context.Context, c *Comm, v T, opts ...ValueOption) ([]T, error) {
	return allgatherValues(now(ctx), c, v, opts...)
}

// allgatherValues is AllgatherValues made as h says: the library's own
// uses (a window's or a shared region's making) are made quietly, part of
// the call they serve.
func allgatherValues[T any](h how, c *Comm, v T, opts ...ValueOption) ([]T, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	cfg := valueOptions(opts)
	msg, err := encodeOr(v, cfg, "AllgatherValues")
	if err != nil {
		return nil, err
	}
	sizes := make([]int64, c.Size())
	if err := runNow(h.ctx)(allgatherCall[int64](h, c, []int64{int64(len(msg))}, sizes, nil)); err != nil {
		return nil, err
	}
	counts, displs, total := blocks(sizes)
	buf := make([]byte, total)
	if err := runNow(h.ctx)(allgathervCall[byte](h, c, msg, buf, counts, displs, nil)); err != nil {
		return nil, err
	}
	return decodeBlocks[T](buf, counts, displs, cfg, "AllgatherValues")
}

// ScatterValues gives rank r root's vs[r]; vs matters at root only, where
// it holds Size() values.
func ScatterValues[T any](ctx context.Context, c *Comm, vs []T, root int, opts ...ValueOption) (T, error) {
	var zero T
	if err := c.checkRoot(root); err != nil {
		return zero, err
	}
	cfg := valueOptions(opts)
	var sizes []int64
	var send []byte
	var counts, displs []int
	if c.Rank() == root {
		if len(vs) != c.Size() {
			return zero, fmt.Errorf("commtune: ScatterValues: %d values for %d ranks", len(vs), c.Size())
		}
		var err error
		if send, sizes, err = encodeEach(vs, cfg, "ScatterValues"); err != nil {
			return zero, err
		}
		counts, displs, _ = blocks(sizes)
	}
	size := make([]int64, 1)
	if err := Scatter(ctx, c, sizes, size, root); err != nil {
		return zero, err
	}
	msg := make([]byte, size[0])
	if err := Scatterv(ctx, c, send, counts, displs, msg, root); err != nil {
		return zero, err
	}
	return decodeValue[T](msg, cfg, fmt.Sprintf("from rank %d in ScatterValues", root))
}

// AlltoallValues sends vs[d] to rank d and returns what each rank sent
// this one, in rank order; vs holds Size() values.
func AlltoallValues[T any](ctx context.Context, c *Comm, vs []T, opts ...ValueOption) ([]T, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	if len(vs) != c.Size() {
		return nil, fmt.Errorf("commtune: AlltoallValues: %d values for %d ranks", len(vs), c.Size())
	}
	cfg := valueOptions(opts)
	send, sendSizes, err := encodeEach(vs, cfg, "AlltoallValues")
	if err != nil {
		return nil, err
	}
	recvSizes := make([]int64, len(vs))
	if err := Alltoall(ctx, c, sendSizes, recvSizes); err != nil {
		return nil, err
	}
	sc, sd, _ := blocks(sendSizes)
	rc, rd, total := blocks(recvSizes)
	buf := make([]byte, total)
	if err := Alltoallv(ctx, c, send, sc, sd, buf, rc, rd); err != nil {
		return nil, err
	}
	return decodeBlocks[T](buf, rc, rd, cfg, "AlltoallValues")
}

// ReduceValue combines every rank's v with op at root, in rank order
// (op(op(v0, v1), v2)…), and returns the result there (the zero T
// elsewhere). op must be associative; it need not commute.
func ReduceValue[T any](ctx context.Context, c *Comm, v T, op func(a, b T) T, root int, opts ...ValueOption) (T, error) {
	var zero T
	if op == nil {
		return zero, fmt.Errorf("commtune: ReduceValue: nil op")
	}
	vs, err := GatherValues(ctx, c, v, root, opts...)
	if err != nil || len(vs) == 0 {
		return zero, err
	}
	acc := vs[0]
	for _, x := range vs[1:] {
		acc = op(acc, x)
	}
	return acc, nil
}
