package memcopy_test

import (
	"fmt"

	"github.com/commtune/commtune/internal/memcopy"
)

// A receiver drains a large message from a shared-memory ring with
// streaming stores, then publishes it; NT has already fenced the stores.
func ExampleNT() {
	ring := make([]byte, 2<<20) // stands in for a chunk of the shm ring
	for i := range ring {
		ring[i] = byte(i)
	}
	msg := make([]byte, len(ring))
	n := memcopy.NT(msg, ring)
	fmt.Println(n, msg[12345] == ring[12345])
	// Output: 2097152 true
}
