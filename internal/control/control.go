// Package control gives commtune's own tools — the sampler, the
// benchmarks, the demo — the machinery behind a communicator: per-peer
// protocol policy, the scheduler's strategy and corking, which transport
// reaches a peer. They need to drive the library's real code paths one
// method at a time; applications do not, so none of this is public API. A
// tool gets its rank's Endpoint from a Tap it hands to Init or Local
// (config.WithTap).
package control

import (
	"sync"

	"github.com/commtune/commtune/internal/core"
	"github.com/commtune/commtune/internal/driver"
	"github.com/commtune/commtune/internal/profile"
	"github.com/commtune/commtune/internal/sched"
)

// Endpoint is one rank's machinery. Peers are world ranks.
type Endpoint interface {
	// Policy and SetPolicy read and set how messages to peer travel.
	Policy(peer int) core.Policy
	SetPolicy(peer int, p core.Policy) error
	// SetStrategy replaces the scheduler's strategy for every peer; nil
	// gives each peer back the one Init chose.
	SetStrategy(s sched.Strategy)
	// Cork and Uncork hold and release what is sent to peer (sched.Cork).
	Cork(peer int)
	Uncork(peer int)
	// Transport names what reaches peer: "self", "inproc", "shm" or "tcp".
	Transport(peer int) string
	// Rails returns the capabilities of the rails to peer.
	Rails(peer int) []driver.Caps
	// RailModels returns the prediction of each rail to peer that a split
	// uses (nil where the profile has none), and RailBytes what each has
	// carried.
	RailModels(peer int) []*sched.RailModel
	RailBytes(peer int) []int64
	// SearchedShare returns the search of the split toward peer: the
	// loaded rail whose share is searched (-1: none) and that share
	// (sched.Scheduler.SearchedShare).
	SearchedShare(peer int) (rail int, share float64)
	// EagerFrames returns the Eager frames posted to peer and the packets
	// they carried (sched.Scheduler.EagerFrames).
	EagerFrames(peer int) (frames, packets int64)
	// Observe sets what the rank's calls record from the next call on:
	// counters, and the timeline when the job writes one
	// (observe.Recorder.Observe), for the benchmark that measures what
	// each costs.
	Observe(count, trace bool)
	// Stats returns the engine's counters.
	Stats() core.Stats
	// Crash ends a goroutine rank as a crash of its process would: its
	// peers see it lost and it sends nothing more (tests of recovery).
	Crash(err error)
}

// Plan is what the library decides for one peer (PlanFor).
type Plan struct {
	// Policy is how messages to the peer travel.
	Policy core.Policy
	// Tuning is the profile's decisions behind Policy, nil on the
	// defaults; TuneErr why the profile could not decide, if it could not.
	Tuning  *profile.Tuning
	TuneErr error
	// Strategy names the scheduler's strategy for the peer, Why where the
	// scheduling choices (split, aggregation) came from, one line each.
	Strategy string
	Why      []string
}

// Tap collects, by world rank, the endpoints that an Init or Local call
// given config.WithTap(t) builds: how a tool reaches the machinery behind
// the communicators it made. The zero Tap is ready; a nil Tap collects
// nothing.
type Tap struct {
	mu  sync.Mutex
	eps map[int]Endpoint
}

// Add records rank's endpoint.
func (t *Tap) Add(rank int, ep Endpoint) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.eps == nil {
		t.eps = map[int]Endpoint{}
	}
	t.eps[rank] = ep
}

// Of returns world rank's endpoint, nil if none was built.
func (t *Tap) Of(rank int) Endpoint {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.eps[rank]
}
