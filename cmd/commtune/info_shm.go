package main

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"text/tabwriter"

	"github.com/commtune/commtune/internal/config"
	"github.com/commtune/commtune/internal/driver/shm"
	"github.com/commtune/commtune/internal/units"
)

// shmInfoRanks are the node sizes the shm section reports, with this
// machine's CPU count added.
var shmInfoRanks = []int{2, 8, 32, 64, 128, 256}

// shmInfo is the shm section of `commtune info`: the shared memory one
// rank holds for messages to it, by ranks on the node, with the ring and
// chunk sizes, budget and queue mode this environment sets
// (COMMTUNE_SHM_RING, COMMTUNE_SHM_CHUNK, COMMTUNE_SHM_BUDGET,
// COMMTUNE_SHM_QUEUE).
type shmInfo struct {
	Rule  string         `json:"rule"`
	Sizes []shmFootprint `json:"sizes"`
}

type shmFootprint struct {
	LocalRanks int   `json:"local_ranks"`
	Queue      bool  `json:"queue"` // pairs start on the inbound queues
	Rings      int   `json:"rings"` // peers that may get a ring
	PoolMax    int64 `json:"pool_max_bytes"`
	RingBytes  int   `json:"ring_bytes"`
	AtStart    int64 `json:"at_start_bytes"`
	PeerFirst  int64 `json:"per_talking_peer_first_bytes"`
	PeerMax    int64 `json:"per_talking_peer_max_bytes"`
	Budget     int   `json:"budget_bytes"`
	RankTalk   int64 `json:"per_rank_all_talking_bytes"`
	NodeTalk   int64 `json:"per_node_all_talking_bytes"`
	RankMax    int64 `json:"per_rank_max_bytes"`
	NodeMax    int64 `json:"per_node_max_bytes"`
}

const shmRule = "a rank holds its segment's header and queue pages from the start; a peer with a ring to it adds a ring header page and the part of " +
	"the ring its traffic has needed in flight (4 KiB first, growing as more is in flight; the whole ring once a message of 4 KiB or more passes), " +
	"all rings' growth together within the budget; pairs that never talk cost nothing. On the queue path (nodes of more than 16 ranks by default) " +
	"pairs talk through the receiver's inbound queue in fragments of the sender's pool (a page of small ones and two large ones first, growing with " +
	"what the rank has in flight), and only the first 16 busy senders to a rank get a fast box (a page), no ring data; every peer talking is then " +
	"the dense shape (an all-to-all), a few the sparse one. " +
	"Past the budget a ring grows only to room for two of a record larger than it has (four chunks of a large message), so only records of a " +
	"quarter ring reach the last column. Stats.SharedMemory reports a running rank's figure"

func collectShm(infoOptions) (infoReport, error) {
	cfg, err := config.Build(os.LookupEnv, nil)
	if err != nil {
		return nil, err
	}
	sizes := slices.Clone(shmInfoRanks)
	if n := runtime.NumCPU(); !slices.Contains(sizes, n) {
		sizes = append(sizes, n)
		slices.Sort(sizes)
	}
	r := &shmInfo{Rule: shmRule}
	for _, n := range sizes {
		f, err := shm.FootprintFor(n, cfg.Shm.Ring, cfg.Shm.Chunk, cfg.Shm.Budget, shm.QueueModeOf(cfg.Shm.Queue))
		if err != nil {
			return nil, err
		}
		r.Sizes = append(r.Sizes, shmFootprint{LocalRanks: n, Queue: f.Queue, Rings: f.Rings, PoolMax: f.PoolMax, RingBytes: f.RingSize, AtStart: f.AtStart, PeerFirst: f.PeerFirst,
			PeerMax: f.PeerMax, Budget: f.Budget, RankTalk: f.Talking, NodeTalk: int64(n) * f.Talking, RankMax: f.Max, NodeMax: int64(n) * f.Max})
	}
	return r, nil
}

func (r *shmInfo) writeText(w io.Writer) error {
	fmt.Fprintf(w, "Shared memory per rank (%s)\n", r.Rule)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "ranks on the node\tpath\trings\tring\tat start\tper talking peer, first\tbudget\tper rank, every peer talking\tper node, every peer talking\tper node, every ring whole and pool full\t")
	for _, s := range r.Sizes {
		path := "rings"
		if s.Queue {
			path = "queue (pool ≤ " + units.FormatSize(s.PoolMax) + ")"
		}
		fmt.Fprintf(tw, "%d\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", s.LocalRanks, path, s.Rings, units.FormatSize(int64(s.RingBytes)), units.FormatSize(s.AtStart),
			units.FormatSize(s.PeerFirst), units.FormatSize(int64(s.Budget)), units.FormatSize(s.RankTalk), units.FormatSize(s.NodeTalk), units.FormatSize(s.NodeMax))
	}
	return tw.Flush()
}
