package commtune

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
)

// Comm is a communicator: a group of ranks with its own matching context,
// so that messages sent on one communicator never match receives on
// another. The world communicator comes from Init or Local; Dup and Split
// derive others. Methods are safe for concurrent use.
type Comm struct {
	ep      *endpoint
	ctx     uint64 // point-to-point context
	collCtx uint64 // collective operations' context
	group   []int  // world rank of each member, by rank in this communicator
	rank    int
	inv     map[int]int // world rank → rank here; nil for the world
	world   bool

	mu      sync.Mutex
	derived uint64 // Dup/Split calls so far: identical on all members
	closed  atomic.Bool
	collSeq atomic.Uint64 // collective calls so far: their tags
	coll    *collCoord    // collective calls' agreement (collcheck.go), made on first use
	plansMu sync.Mutex
	plans   map[planKey]*plan // schedules of calls made before (collrun.go)
	sel     *collSelector     // the lottery's state (collselect.go), made on first use
}

// AnySource and AnyTag match any sender and any tag in Recv, Irecv,
// Probe and Iprobe.
const (
	AnySource = -1
	AnyTag    = -1
)

// TagUB is the largest tag a message may carry (MPI's MPI_TAG_UB): tags
// travel as 32-bit integers. Sends, receives and probes refuse larger ones.
const TagUB = 1<<31 - 1

// Undefined as a Split color leaves the calling rank out of every new
// communicator; Split then returns nil.
const Undefined = -1

// Status describes a received or probed message.
type Status struct {
	Source int // rank of the sender in the communicator
	Tag    int
	Count  int // bytes received (for Probe: bytes in the message)
}

func newWorld(ep *endpoint, rank, size int) *Comm {
	group := make([]int, size)
	for i := range group {
		group[i] = i
	}
	return &Comm{ep: ep, ctx: 0, collCtx: mix(0, collSalt), group: group, rank: rank, world: true}
}

// collSalt separates a communicator's collective traffic from its
// point-to-point traffic.
const collSalt = 0xC011EC7

// mix derives a context id: SplitMix64 over the inputs. Derived ids are
// computed identically on every member with no communication; two
// communicators collide with probability about 2^-64.
func mix(vals ...uint64) uint64 {
	h := uint64(0x9E3779B97F4A7C15)
	for _, v := range vals {
		h ^= v + 0x9E3779B97F4A7C15 + (h << 6) + (h >> 2)
		h = (h ^ (h >> 30)) * 0xBF58476D1CE4E5B9
		h = (h ^ (h >> 27)) * 0x94D049BB133111EB
		h ^= h >> 31
	}
	return h
}

// Rank returns the calling rank's number in c, from 0 to Size()-1; -1 for
// a nil communicator.
func (c *Comm) Rank() int {
	if c == nil {
		return -1
	}
	return c.rank
}

// Size returns the number of ranks in c; 0 for a nil communicator.
func (c *Comm) Size() int {
	if c == nil {
		return 0
	}
	return len(c.group)
}

// WorldRank returns the world rank of c's rank r; -1 for a rank out of
// range or a nil communicator.
func (c *Comm) WorldRank(r int) int {
	if c == nil || r < 0 || r >= len(c.group) {
		return -1
	}
	return c.group[r]
}

func (c *Comm) toWorld(r int, what string) (int, error) {
	if r == AnySource && what != "destination" {
		return AnySource, nil
	}
	if r < 0 || r >= len(c.group) {
		return 0, fmt.Errorf("commtune: %s rank %d outside communicator of size %d", what, r, len(c.group))
	}
	return c.group[r], nil
}

func (c *Comm) fromWorld(w int) int {
	if c.inv == nil {
		return w
	}
	if r, ok := c.inv[w]; ok {
		return r
	}
	return -1
}

// check is where every call on a communicator starts: a nil one, one
// closed, or one whose rank has closed its world communicator, fails.
func (c *Comm) check() error {
	if c == nil {
		return errNilComm
	}
	if c.closed.Load() || c.ep.closed.Load() {
		return ErrClosed
	}
	return nil
}

var errNilComm = errors.New("commtune: nil communicator")

// checkTag validates a tag: 0 to TagUB, or AnyTag where any is set
// (receives and probes).
func checkTag(tag int, any bool, what string) error {
	if tag == AnyTag && any {
		return nil
	}
	if tag < 0 || tag > TagUB {
		return fmt.Errorf("commtune: %s tag %d outside [0, TagUB = %d]", what, tag, TagUB)
	}
	return nil
}

func (c *Comm) nextDerived() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.derived++
	return c.derived
}

func (c *Comm) child(ctx uint64, group []int, rank int) *Comm {
	inv := make(map[int]int, len(group))
	for i, w := range group {
		inv[w] = i
	}
	return &Comm{ep: c.ep, ctx: ctx, collCtx: mix(ctx, collSalt), group: group, rank: rank, inv: inv}
}

// Dup returns a communicator with the same ranks and a new matching
// context. Every rank of c must call it, in the same order relative to c's
// other Dup and Split calls.
func (c *Comm) Dup() (*Comm, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	id := mix(c.ctx, c.nextDerived(), 0)
	return c.child(id, append([]int(nil), c.group...), c.rank), nil
}

// Split partitions c: ranks passing the same color form a new communicator,
// ordered by key then by rank in c. A rank passing Undefined gets nil. Every
// rank of c must call it (it exchanges colors and keys).
func (c *Comm) Split(ctx context.Context, color, key int) (*Comm, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	if color < 0 && color != Undefined {
		return nil, fmt.Errorf("commtune: split color %d is negative", color)
	}
	seq := c.nextDerived()
	all, err := c.allgatherInts(ctx, []int{color, key})
	if err != nil {
		return nil, fmt.Errorf("commtune: split: %w", err)
	}
	if color == Undefined {
		return nil, nil
	}
	type member struct{ key, rank int }
	var ms []member
	for r, v := range all {
		if v[0] == color {
			ms = append(ms, member{v[1], r})
		}
	}
	sort.Slice(ms, func(i, j int) bool {
		if ms[i].key != ms[j].key {
			return ms[i].key < ms[j].key
		}
		return ms[i].rank < ms[j].rank
	})
	group := make([]int, len(ms))
	me := 0
	for i, m := range ms {
		group[i] = c.group[m.rank]
		if m.rank == c.rank {
			me = i
		}
	}
	return c.child(mix(c.ctx, seq, uint64(color)+1), group, me), nil
}

// Close releases c. Closing the world communicator finalizes the rank:
// queued messages are sent, connections are closed in an orderly way (peers
// see ErrPeerLost wrapping an orderly close for anything still pending with
// this rank), and every communicator derived from it stops working.
func (c *Comm) Close() error {
	if c == nil || c.closed.Swap(true) {
		return nil
	}
	if c.world {
		return c.ep.close()
	}
	return nil
}

// Transport names what carries messages from this rank to rank r of c:
// "self", "inproc" (goroutine ranks), "shm" (shared memory, same node) or
// "tcp"; "" for a rank out of range or a nil communicator.
func (c *Comm) Transport(r int) string {
	w := c.WorldRank(r)
	if w < 0 {
		return ""
	}
	return c.ep.Transport(w)
}
