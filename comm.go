package commtune

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/commtune/commtune/internal/comm"
)

// Comm is a communicator: a group of ranks with its own matching context,
// so that messages sent on one communicator never match receives on
// another. The world communicator comes from Init or Local; Dup and Split
// derive others. Methods are safe for concurrent use.
type Comm struct {
	in *comm.Comm
}

// AnySource and AnyTag match any sender and any tag in Recv, Irecv,
// Probe and Iprobe.
const (
	AnySource = comm.AnySource
	AnyTag    = comm.AnyTag
)

// TagUB is the largest tag a message may carry (MPI's MPI_TAG_UB): tags
// travel as 32-bit integers. Sends, receives and probes refuse larger ones.
const TagUB = comm.TagUB

// Undefined as a Split color leaves the calling rank out of every new
// communicator; Split then returns nil.
const Undefined = comm.Undefined

// Status describes a received or probed message: Source is the sender's
// rank in the communicator, Tag its tag, Count the bytes received (for
// Probe: the bytes in the message).
type Status = comm.Status

// wrap returns the public communicator of c (nil for nil).
func wrap(c *comm.Comm) *Comm {
	if c == nil {
		return nil
	}
	return &Comm{in: c}
}

// check is where every call on a communicator starts: a nil one, one
// closed, or one whose rank has closed its world communicator, fails.
func (c *Comm) check() error {
	if c == nil {
		return errNilComm
	}
	return c.in.Check()
}

var errNilComm = errors.New("commtune: nil communicator")

// Rank returns the calling rank's number in c, from 0 to Size()-1; -1 for
// a nil communicator.
func (c *Comm) Rank() int {
	if c == nil {
		return -1
	}
	return c.in.Rank()
}

// Size returns the number of ranks in c; 0 for a nil communicator.
func (c *Comm) Size() int {
	if c == nil {
		return 0
	}
	return c.in.Size()
}

// WorldRank returns the world rank of c's rank r; -1 for a rank out of
// range or a nil communicator.
func (c *Comm) WorldRank(r int) int {
	if c == nil {
		return -1
	}
	return c.in.WorldRank(r)
}

// Dup returns a communicator with the same ranks and a new matching
// context. Every rank of c must call it, in the same order relative to c's
// other Dup and Split calls.
func (c *Comm) Dup() (*Comm, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	d, err := c.in.Dup()
	return wrap(d), err
}

// Split partitions c: ranks passing the same color form a new communicator,
// ordered by key then by rank in c. A rank passing Undefined gets nil. Every
// rank of c must call it (it exchanges colors and keys).
func (c *Comm) Split(ctx context.Context, color, key int) (*Comm, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	t := c.begin(opSplit)
	d, err := c.in.Split(ctx, color, key)
	endCall(ctx, c.in, t, opSplit, "", "", err)
	return wrap(d), err
}

// Close releases c: messages that arrived for it and were never received
// are dropped, and so are those still on their way. Closing the world
// communicator finalizes the rank: queued messages are sent, connections
// are closed in an orderly way (peers see ErrPeerLost wrapping an orderly
// close for anything still pending with this rank), and every
// communicator derived from it stops working.
func (c *Comm) Close() error {
	if c == nil {
		return nil
	}
	return c.in.Close()
}

// Transport names what carries messages from this rank to rank r of c:
// "self", "inproc" (goroutine ranks), "shm" (shared memory, same node) or
// "tcp"; "" for a rank out of range or a nil communicator.
func (c *Comm) Transport(r int) string {
	if c == nil {
		return ""
	}
	return c.in.Transport(r)
}

// Abort ends every rank of the job with code (MPI_Abort), from any rank:
// the reason is printed once (by `commtune run`, else by this rank), the
// launcher — commtune run, Hydra or Slurm through PMI — is asked to stop
// the other ranks, and this process exits with code (1 when code is
// outside 0–255). Under Local every goroutine rank is in this process,
// which exits. Abort does not return.
func (c *Comm) Abort(code int, reason string) {
	if c == nil || c.in == nil {
		fmt.Fprintf(os.Stderr, "commtune: abort on a nil communicator, code %d: %s\n", code, reason)
		if code < 0 || code > 255 {
			code = 1
		}
		os.Exit(code)
	}
	c.in.Endpoint().Abort(code, reason)
}
