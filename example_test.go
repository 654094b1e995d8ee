package commtune_test

import (
	"context"
	"fmt"

	"github.com/commtune/commtune"
)

// Two ranks as goroutines: rank 0 sends a slice of float64 to rank 1.
func ExampleLocal() {
	err := commtune.Local(2, func(c *commtune.Comm) error {
		ctx := context.Background()
		if c.Rank() == 0 {
			return commtune.SendSlice(ctx, c, []float64{1.5, 2.5, 3.5}, 1, 0)
		}
		v := make([]float64, 3)
		st, err := commtune.RecvSlice(ctx, c, v, 0, 0)
		fmt.Println(v, "from rank", st.Source, commtune.Count[float64](st), "elements")
		return err
	})
	if err != nil {
		fmt.Println(err)
	}
	// Output: [1.5 2.5 3.5] from rank 0 3 elements
}

// A ring: every rank passes its number to the next one.
func ExampleComm_Sendrecv() {
	out := make([]int, 4)
	_ = commtune.Local(4, func(c *commtune.Comm) error {
		next, prev := (c.Rank()+1)%c.Size(), (c.Rank()+c.Size()-1)%c.Size()
		in := []int64{0}
		_, err := c.Sendrecv(context.Background(),
			commtune.Bytes([]int64{int64(c.Rank())}), next, 0,
			commtune.Bytes(in), prev, 0)
		out[c.Rank()] = int(in[0])
		return err
	})
	fmt.Println(out)
	// Output: [3 0 1 2]
}

// Any Go value as a message: a struct goes through encoding/gob, and the
// receiver needs to know neither its size nor how it was encoded.
func ExampleSendValue() {
	type job struct {
		Name  string
		Steps []int
	}
	_ = commtune.Local(2, func(c *commtune.Comm) error {
		ctx := context.Background()
		if c.Rank() == 0 {
			return commtune.SendValue(ctx, c, job{"relax", []int{1, 2, 3}}, 1, 0)
		}
		j, st, err := commtune.RecvValue[job](ctx, c, 0, 0)
		fmt.Printf("%+v from rank %d\n", j, st.Source)
		return err
	})
	// Output: {Name:relax Steps:[1 2 3]} from rank 0
}

// Every rank's value, in rank order, on every rank.
func ExampleAllgatherValues() {
	var names []string
	_ = commtune.Local(3, func(c *commtune.Comm) error {
		all, err := commtune.AllgatherValues(context.Background(), c, fmt.Sprintf("rank-%d", c.Rank()))
		if c.Rank() == 0 {
			names = all
		}
		return err
	})
	fmt.Println(names)
	// Output: [rank-0 rank-1 rank-2]
}

// Several goroutines receive on one communicator: a matched probe takes
// the message it describes, so no other goroutine's receive can take it
// first, and the buffer is sized to fit.
func ExampleComm_Mprobe() {
	_ = commtune.Local(2, func(c *commtune.Comm) error {
		ctx := context.Background()
		if c.Rank() == 0 {
			return c.Send(ctx, []byte("of a size the receiver does not know"), 1, 5)
		}
		m, err := c.Mprobe(ctx, commtune.AnySource, commtune.AnyTag)
		if err != nil {
			return err
		}
		buf := make([]byte, m.Status().Count)
		st, err := c.Mrecv(ctx, m, buf)
		fmt.Printf("%d bytes, tag %d: %s\n", st.Count, st.Tag, buf)
		return err
	})
	// Output: 36 bytes, tag 5: of a size the receiver does not know
}

// On a ring of 4 ranks as a periodic Cart, every rank gathers its two
// neighbours' ranks: the one before, then the one after.
func ExampleNeighborAllgather() {
	out := make([][]int32, 4)
	_ = commtune.Local(4, func(c *commtune.Comm) error {
		ring, err := c.Cart([]int{4}, []bool{true})
		if err != nil {
			return err
		}
		got := make([]int32, 2)
		err = commtune.NeighborAllgather(context.Background(), ring.Neighborhood(), []int32{int32(c.Rank())}, got)
		out[c.Rank()] = got
		return err
	})
	fmt.Println(out)
	// Output: [[3 1] [0 2] [1 3] [2 0]]
}
