package conformance

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/commtune/commtune"
)

// particle is a struct of 8 fields, as a program would send.
type particle struct {
	ID         int64
	X, Y, Z    float64
	VX, VY, VZ float64
	Name       string
}

// vec3 is plain (numbers only): values of it go as their memory.
type vec3 struct {
	X, Y, Z float64
	ID      int32
	Tags    [3]uint8
}

// celsius marshals itself (encoding.BinaryMarshaler): the value calls use
// its encoding.
type celsius struct{ deg float64 }

func (c celsius) MarshalBinary() ([]byte, error) {
	return []byte(strconv.FormatFloat(c.deg, 'g', -1, 64) + "C"), nil
}

func (c *celsius) UnmarshalBinary(b []byte) error {
	s, ok := strings.CutSuffix(string(b), "C")
	if !ok {
		return fmt.Errorf("%q is not a temperature", b)
	}
	v, err := strconv.ParseFloat(s, 64)
	c.deg = v
	return err
}

// valueRoundTrip sends v from rank 0 to rank 1 and checks it arrives equal.
func valueRoundTrip[T any](ctx context.Context, c *commtune.Comm, v T, tag int, opts ...commtune.ValueOption) error {
	switch c.Rank() {
	case 0:
		return commtune.SendValue(ctx, c, v, 1, tag, opts...)
	case 1:
		got, st, err := commtune.RecvValue[T](ctx, c, 0, tag, opts...)
		if err != nil {
			return err
		}
		if st.Source != 0 || st.Tag != tag || !reflect.DeepEqual(got, v) {
			return fmt.Errorf("%T: got %+v (%+v), sent %+v", v, got, st, v)
		}
	}
	return nil
}

// values: any value as a message, point to point and in every collective
// form; a message that does not decode is an error naming its sender and
// tag, and the next message on that tag arrives intact.
func values(ctx context.Context, world *commtune.Comm) error {
	c, err := world.Dup() // tags of its own: ranks done go on to the next case
	if err != nil {
		return err
	}
	defer c.Close()
	p := particle{ID: 7, X: 1, Y: 2, Z: 3, VX: -1, VY: 0.5, VZ: math.Pi, Name: "p7"}
	checks := []func() error{
		func() error { return valueRoundTrip(ctx, c, p, 1) },
		func() error { return valueRoundTrip(ctx, c, []particle{p, {ID: 8}}, 2) },
		func() error { return valueRoundTrip(ctx, c, map[string][]int{"a": {1, 2}, "b": nil}, 3) },
		func() error { return valueRoundTrip(ctx, c, "héllo", 4) },
		func() error { return valueRoundTrip(ctx, c, []float64{1.5, -2, math.Inf(1)}, 5) },
		func() error { return valueRoundTrip(ctx, c, []float64{}, 6) },
		func() error { return valueRoundTrip(ctx, c, int32(-12345), 7) },
		func() error { return valueRoundTrip(ctx, c, celsius{21.5}, 8) },
		func() error { return valueRoundTrip(ctx, c, vec3{1, 2, 3, -4, [3]uint8{5, 6, 7}}, 10) },
		func() error { return valueRoundTrip(ctx, c, []vec3{{X: 1}, {Y: 2, ID: 9}}, 11) },
		func() error { return valueRoundTrip(ctx, c, [4]int16{1, -2, 3, -4}, 12) },
		func() error { return valueRoundTrip(ctx, c, p, 9, commtune.WithCodec(commtune.JSONCodec)) },
		func() error { return badValue(ctx, c) },
		func() error { return valueCollectives(ctx, c) },
	}
	for i, check := range checks {
		if err := check(); err != nil {
			return fmt.Errorf("check %d: %w", i, err)
		}
	}
	return nil
}

// badValue: bytes that are no particle fail RecvValue with ErrDecode,
// naming sender and tag, and consume only that message.
func badValue(ctx context.Context, c *commtune.Comm) error {
	const tag = 20
	switch c.Rank() {
	case 0:
		if err := c.Send(ctx, []byte("not a gob stream"), 1, tag); err != nil {
			return err
		}
		return commtune.SendValue(ctx, c, particle{ID: 99}, 1, tag)
	case 1:
		_, st, err := commtune.RecvValue[particle](ctx, c, 0, tag)
		if !errors.Is(err, commtune.ErrDecode) || !strings.Contains(err.Error(), "rank 0, tag 20") || st.Tag != tag {
			return fmt.Errorf("undecodable value: %v (%+v)", err, st)
		}
		got, _, err := commtune.RecvValue[particle](ctx, c, 0, tag)
		if err != nil || got.ID != 99 {
			return fmt.Errorf("the message after an undecodable one: %+v %v", got, err)
		}
		// A slice of numbers whose bytes do not fill its elements.
		if err := c.Send(ctx, []byte{1, 2, 3}, 1, tag); err != nil {
			return err
		}
		if _, _, err := commtune.RecvValue[[]float64](ctx, c, 1, tag); !errors.Is(err, commtune.ErrDecode) {
			return fmt.Errorf("3 bytes as []float64: %v", err)
		}
	}
	return nil
}

// valueCollectives checks every collective form of values, with values of
// different sizes on different ranks.
func valueCollectives(ctx context.Context, c *commtune.Comm) error {
	n, me := c.Size(), c.Rank()
	mine := strings.Repeat("x", me*3) + strconv.Itoa(me)
	root := n - 1
	b, err := commtune.BcastValue(ctx, c, map[string]int{"root": root * 10}, root)
	if err != nil || b["root"] != root*10 {
		return fmt.Errorf("BcastValue: %v %v", b, err)
	}
	want := make([]string, n)
	for r := range want {
		want[r] = strings.Repeat("x", r*3) + strconv.Itoa(r)
	}
	g, err := commtune.GatherValues(ctx, c, mine, root)
	if err != nil || (me == root && !slices.Equal(g, want)) || (me != root && g != nil) {
		return fmt.Errorf("GatherValues: %q %v", g, err)
	}
	a, err := commtune.AllgatherValues(ctx, c, mine)
	if err != nil || !slices.Equal(a, want) {
		return fmt.Errorf("AllgatherValues: %q %v", a, err)
	}
	var vs []particle
	if me == root {
		for r := 0; r < n; r++ {
			vs = append(vs, particle{ID: int64(r), Name: strings.Repeat("n", r)})
		}
	}
	s, err := commtune.ScatterValues(ctx, c, vs, root)
	if err != nil || s.ID != int64(me) || s.Name != strings.Repeat("n", me) {
		return fmt.Errorf("ScatterValues: %+v %v", s, err)
	}
	out := make([][]int, n)
	for d := range out {
		out[d] = []int{me, d, me * d}
	}
	in, err := commtune.AlltoallValues(ctx, c, out)
	if err != nil {
		return fmt.Errorf("AlltoallValues: %v", err)
	}
	for s := range in {
		if !slices.Equal(in[s], []int{s, me, s * me}) {
			return fmt.Errorf("AlltoallValues from %d: %v", s, in[s])
		}
	}
	// Concatenation is associative but does not commute: rank order shows.
	r, err := commtune.ReduceValue(ctx, c, mine, func(x, y string) string { return x + "|" + y }, 0)
	if err != nil || (me == 0 && r != strings.Join(want, "|")) {
		return fmt.Errorf("ReduceValue: %q %v", r, err)
	}
	return nil
}
