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
