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
// chunk sizes and the budget this environment sets (COMMTUNE_SHM_RING,
// COMMTUNE_SHM_CHUNK, COMMTUNE_SHM_BUDGET).
type shmInfo struct {
	Rule  string         `json:"rule"`
	Sizes []shmFootprint `json:"sizes"`
}

type shmFootprint struct {
	LocalRanks int   `json:"local_ranks"`
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

const shmRule = "a rank holds its segment's header page from the start; a peer that sends it something adds a ring header page and the part of " +
	"the ring its traffic has needed in flight (4 KiB first, growing as more is in flight; the whole ring once a message of 4 KiB or more passes), " +
	"all rings' growth together within the budget; pairs that never talk cost nothing. Past the budget a ring grows only to room for two of a record " +
	"larger than it has (four chunks of a large message), so only records of a quarter ring reach the last column. Stats.SharedMemory reports a running rank's figure"

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
		f, err := shm.FootprintFor(n, cfg.Shm.Ring, cfg.Shm.Chunk, cfg.Shm.Budget)
		if err != nil {
			return nil, err
		}
		r.Sizes = append(r.Sizes, shmFootprint{LocalRanks: n, RingBytes: f.RingSize, AtStart: f.AtStart, PeerFirst: f.PeerFirst,
			PeerMax: f.PeerMax, Budget: f.Budget, RankTalk: f.Talking, NodeTalk: int64(n) * f.Talking, RankMax: f.Max, NodeMax: int64(n) * f.Max})
	}
	return r, nil
}

func (r *shmInfo) writeText(w io.Writer) error {
	fmt.Fprintf(w, "Shared memory per rank (%s)\n", r.Rule)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "ranks on the node\tring\tat start\tper talking peer, first\tbudget\tper rank, every peer talking\tper node, every peer talking\tper node, every ring whole\t")
	for _, s := range r.Sizes {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", s.LocalRanks, units.FormatSize(int64(s.RingBytes)), units.FormatSize(s.AtStart),
			units.FormatSize(s.PeerFirst), units.FormatSize(int64(s.Budget)), units.FormatSize(s.RankTalk), units.FormatSize(s.NodeTalk), units.FormatSize(s.NodeMax))
	}
	return tw.Flush()
}
