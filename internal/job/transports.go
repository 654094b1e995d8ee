package job

import (
	"fmt"
	"io"
	"slices"
)

// shmUsable reports whether this rank sets up shared memory with the
// other ranks of its node (local, world ranks, more than one), given
// supported, shm.Supported()'s answer. Where this OS has no shared-memory
// transport (every OS but Linux) the node's ranks reach each other over
// TCP instead, as an MPI runs over its other transports when one it lists
// cannot work on the machine; the node's lowest rank says so in one line
// on note, so that slower local messages are not a surprise. A job with
// the transport named but never usable is still a working job, hence no
// error.
func shmUsable(supported error, rank int, local []int, note io.Writer) bool {
	if supported == nil {
		return true
	}
	if rank == slices.Min(local) {
		fmt.Fprintf(note, "commtune: %v; the %d ranks on this node use tcp\n", supported, len(local))
	}
	return false
}
