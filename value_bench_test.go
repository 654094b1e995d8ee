package commtune

import (
	"bytes"
	"context"
	"encoding/binary"
	"testing"
)

// BenchmarkValue compares value messages with what a program writes by
// hand: a 1 MiB []float64 received as a value (exactly allocated) against
// RecvSlice into a buffer of the right size, and a struct of 8 fields as
// a value (gob) against an encoding/binary loop. Rank 0 sends, rank 1
// receives; ns/op is per message.
func BenchmarkValue(b *testing.B) {
	type point struct {
		ID               int64
		X, Y, Z          float64
		VX, VY, VZ, Mass float64
	}
	p := point{ID: 1, X: 1, Y: 2, Z: 3, VX: 4, VY: 5, VZ: 6, Mass: 7}
	floats := make([]float64, 1<<17)
	for _, c := range []struct {
		name       string
		send, recv func(ctx context.Context, c *Comm) error
	}{
		{"float64s-1M/RecvValue",
			func(ctx context.Context, c *Comm) error { return SendValue(ctx, c, floats, 1, 0) },
			func(ctx context.Context, c *Comm) error { _, _, err := RecvValue[[]float64](ctx, c, 0, 0); return err }},
		{"float64s-1M/RecvSlice",
			func(ctx context.Context, c *Comm) error { return SendSlice(ctx, c, floats, 1, 0) },
			func(ctx context.Context, c *Comm) error {
				_, err := RecvSlice(ctx, c, make([]float64, len(floats)), 0, 0)
				return err
			}},
		{"struct8/value",
			func(ctx context.Context, c *Comm) error { return SendValue(ctx, c, p, 1, 0) },
			func(ctx context.Context, c *Comm) error { _, _, err := RecvValue[point](ctx, c, 0, 0); return err }},
		{"struct8/binary",
			func(ctx context.Context, c *Comm) error {
				var w bytes.Buffer
				if err := binary.Write(&w, binary.LittleEndian, &p); err != nil {
					return err
				}
				return c.Send(ctx, w.Bytes(), 1, 0)
			},
			func(ctx context.Context, c *Comm) error {
				buf := make([]byte, binary.Size(p))
				if _, err := c.Recv(ctx, buf, 0, 0); err != nil {
					return err
				}
				var q point
				return binary.Read(bytes.NewReader(buf), binary.LittleEndian, &q)
			}},
	} {
		b.Run(c.name, func(b *testing.B) {
			benchLocal(b, func(ctx context.Context, cm *Comm, n int) error {
				for i := 0; i < n; i++ {
					f := c.send
					if cm.Rank() == 1 {
						f = c.recv
					}
					if err := f(ctx, cm); err != nil {
						return err
					}
				}
				return cm.Barrier(ctx)
			})
		})
	}
}
