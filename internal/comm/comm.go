// Package comm is the communicator runtime behind commtune.Comm: a group
// of world ranks with its own matching contexts over one job.Endpoint,
// Dup and Split, point-to-point and vector calls, and collective calls
// (their schedules, their agreement and the lottery's draws). The root
// package wraps it with the public API and its argument checks' wording;
// commtune's tools reach the endpoint through control.Tap, never through
// a Comm.
package comm

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"weak"

	"github.com/commtune/commtune/internal/core"
	"github.com/commtune/commtune/internal/job"
	"github.com/commtune/commtune/internal/observe"
)

// Comm is one rank's view of a communicator. Methods are safe for
// concurrent use.
type Comm struct {
	ep      *job.Endpoint
	ctx     uint64 // point-to-point context
	collCtx uint64 // collective operations' context
	group   []int  // world rank of each member, by rank in this communicator
	rank    int
	inv     map[int]int // world rank → rank here; nil for the world
	world   bool

	mu      sync.Mutex
	derived uint64 // Dup/Split calls so far: identical on all members
	closed  atomic.Bool
	revoked atomic.Bool               // by this rank or a peer (revoke.go)
	ft      ftState                   // what the recovery calls keep (agree.go), under mu
	tied    []weak.Pointer[Comm]      // DupTied's communicators, which its revocation revokes; under mu
	collSeq atomic.Uint64             // collective calls so far: their tags
	coll    atomic.Pointer[collCoord] // collective calls' agreement (collcheck.go), made on first use
	plansMu sync.Mutex
	plans   map[planKey]*plan // schedules of calls made before (collrun.go)
	// lastPlan is the plan of the last cacheable call, checked first.
	lastPlan atomic.Pointer[plan]
	sel      *collSelector // the lottery's state (collselect.go), made on first use
	// team is this rank's member of the communicator's team, when its
	// ranks share this process (team.go), made on first use.
	team atomic.Pointer[teamMember]
	// seg is the communicator's node segment, when its ranks are
	// processes of one node (segment.go), made on first use.
	seg atomic.Pointer[segment]
	// hier is the communicator split by node for the hierarchical
	// algorithms (hier.go), made on first use; spans says whether its
	// ranks span nodes (spansNodes).
	hier  atomic.Pointer[hierarchy]
	spans knownBool
	// outer is the hierarchical call whose phase this communicator runs,
	// when it is one of a hierarchy's (watchOuter).
	outer atomic.Pointer[outerCall]
	// pullPeers: whether members read each other's memory in place
	// (readsPeers).
	pullPeers knownBool
	// onNode: whether every member reaches the others through shared
	// memory, where the profile's sampled table applies (sampledTable).
	onNode knownBool

	// groupCalls counts CreateGroup calls by set of members and tag
	// (create.go), under mu: identical on all members of each set.
	groupCalls map[groupCall]uint64

	// counters count the calls made on c (observe.go), made on first use;
	// label names c in a timeline.
	counters atomic.Pointer[observe.Counters]
	label    string
}

// AnySource and AnyTag match any sender and any tag.
const (
	AnySource = -1
	AnyTag    = -1
)

// TagUB is the largest tag a message may carry: tags travel as 32-bit
// integers.
const TagUB = 1<<31 - 1

// Undefined as a Split color leaves the calling rank out of every new
// communicator.
const Undefined = -1

// Status describes a received or probed message (commtune.Status).
type Status struct {
	Source int // rank of the sender in the communicator
	Tag    int
	Count  int // bytes received (for Probe: bytes in the message)
}

// NewWorld returns the world communicator of rank in a job of size ranks
// over ep.
func NewWorld(ep *job.Endpoint, rank, size int) *Comm {
	group := make([]int, size)
	for i := range group {
		group[i] = i
	}
	c := &Comm{ep: ep, ctx: 0, collCtx: mix(0, collSalt), group: group, rank: rank, world: true, label: labelOf(true, 0)}
	listenRevocations(ep)
	c.register()
	return c
}

// Endpoint returns the machinery c runs on.
func (c *Comm) Endpoint() *job.Endpoint { return c.ep }

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

// ContextID returns c's point-to-point matching context: the same on
// every member, and different from every other communicator's.
func (c *Comm) ContextID() uint64 { return c.ctx }

// Rank returns the calling rank's number in c.
func (c *Comm) Rank() int { return c.rank }

// Size returns the number of ranks in c.
func (c *Comm) Size() int { return len(c.group) }

// WorldRank returns the world rank of c's rank r; -1 for a rank out of
// range.
func (c *Comm) WorldRank(r int) int {
	if r < 0 || r >= len(c.group) {
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

// Check is where every call on a communicator starts: a nil one, one
// closed, or one whose rank has closed its world communicator, fails.
func (c *Comm) Check() error {
	if c == nil {
		return errNilComm
	}
	if c.closed.Load() || c.ep.Closed() {
		return core.ErrClosed
	}
	if c.revoked.Load() {
		return c.revokedErr()
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
	d := &Comm{ep: c.ep, ctx: ctx, collCtx: mix(ctx, collSalt), group: group, rank: rank, inv: inv, label: labelOf(false, ctx)}
	d.register()
	return d
}

// Dup returns a communicator with the same ranks and a new matching
// context.
func (c *Comm) Dup() (*Comm, error) {
	if err := c.Check(); err != nil {
		return nil, err
	}
	id := mix(c.ctx, c.nextDerived(), 0)
	return c.child(id, append([]int(nil), c.group...), c.rank), nil
}

// Split partitions c by color, ordering by key then rank; a rank passing
// Undefined gets nil.
func (c *Comm) Split(ctx context.Context, color, key int) (*Comm, error) {
	if err := c.Check(); err != nil {
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

// Close releases c; closing the world communicator closes the endpoint.
func (c *Comm) Close() error {
	if c.closed.Swap(true) {
		return nil
	}
	revocable.CompareAndDelete(revokeKey{c.ep, c.ctx}, weak.Make(c))
	if m := c.team.Load(); m != nil {
		m.leave()
	}
	if s := c.seg.Load(); s != nil {
		s.close()
	}
	if h := c.hier.Load(); h != nil {
		h.close()
	}
	if c.world {
		terr := c.ep.Obs.StopTrace()
		return errors.Join(terr, c.ep.Close())
	}
	c.ep.Eng.ReleaseContexts(c.ctx, c.collCtx, mix(c.ctx, rmaSalt), mix(c.ctx, ftSalt))
	return nil
}

// Transport names what carries messages from this rank to rank r of c;
// "" for a rank out of range.
func (c *Comm) Transport(r int) string {
	w := c.WorldRank(r)
	if w < 0 {
		return ""
	}
	return c.ep.Transport(w)
}
