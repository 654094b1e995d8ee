package main

import (
	"context"
	"testing"

	"github.com/commtune/commtune"
)

// TestDHT runs the example on goroutine ranks: every owner's counts must
// match its own reference count (run fails otherwise).
func TestDHT(t *testing.T) {
	for _, n := range []int{1, 3, 4} {
		for _, alloc := range []bool{true, false} {
			err := commtune.Local(n, func(c *commtune.Comm) error {
				return run(context.Background(), c, config{words: 3000, vocab: 700, slots: 1024, alloc: alloc})
			})
			if err != nil {
				t.Fatalf("%d ranks, alloc %v: %v", n, alloc, err)
			}
		}
	}
}
