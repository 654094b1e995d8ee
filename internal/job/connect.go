package job

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"

	"github.com/commtune/commtune/internal/boot"
	"github.com/commtune/commtune/internal/config"
	"github.com/commtune/commtune/internal/driver/shm"
	"github.com/commtune/commtune/internal/driver/tcp"
	"github.com/commtune/commtune/internal/topo"
)

// connectJob reaches every other rank: shared memory for the ranks of this
// node (when enabled), TCP for the others. Ranks learn each other's node
// through the job's key-value service; locality is never assumed.
func connectJob(ctx context.Context, ep *Endpoint, job *boot.Job, cfg config.Config) error {
	listen, err := railAddrs(ctx, job, cfg)
	if err != nil {
		return err
	}
	t, err := tcp.Listen(tcp.Config{
		Rank: job.Rank, Size: job.Size, Secret: job.Secret, Handler: ep.Eng,
		ListenAddrs: listen, ConnectTimeout: cfg.ConnectTimeout,
	})
	if err != nil {
		return err
	}
	if err := meshJob(ctx, ep, t, job, cfg); err != nil {
		return errors.Join(err, t.Close())
	}
	ep.Attach(t)
	return nil
}

// meshJob publishes this rank's node and addresses, sets up shared memory
// with the ranks of its node and connects TCP to the rest.
func meshJob(ctx context.Context, ep *Endpoint, t *tcp.Transport, job *boot.Job, cfg config.Config) error {
	if err := job.KV.Put(ctx, tcpKey(job.Rank), strings.Join(t.Addrs(), ",")); err != nil {
		return fmt.Errorf("publishing tcp addresses: %w", err)
	}
	if err := job.KV.Put(ctx, nodeKey(job.Rank), job.Node); err != nil {
		return fmt.Errorf("publishing this rank's node: %w", err)
	}
	// The CPUs this rank may run on decide, with the peer's, which cache the
	// two share and so seed 004's DMA_min for the pair.
	mine, err := topo.Allowed()
	if err != nil {
		mine = nil // unknown: no cache-free tier
	}
	if err := job.KV.Put(ctx, cpusKey(job.Rank), topo.FormatCPUList(mine)); err != nil {
		return fmt.Errorf("publishing this rank's CPUs: %w", err)
	}
	if err := job.KV.Fence(ctx); err != nil {
		return fmt.Errorf("address exchange: %w", err)
	}
	// Every rank's addresses and node, then the CPUs of this node's ranks:
	// two batched fetches, not three round trips per rank.
	keys := make([]string, 0, 2*job.Size)
	for p := range job.Size {
		keys = append(keys, tcpKey(p), nodeKey(p))
	}
	vals, err := boot.GetAll(ctx, job.KV, keys)
	if err != nil {
		return fmt.Errorf("address exchange: %w", err)
	}
	peers := make([][]string, job.Size)
	var local, neighbours []int // this node's ranks; those but this one
	var cpuKeys []string
	ep.nodeOf = make([]int, job.Size)
	first := map[string]int{} // each node's lowest rank, by name
	for p := range peers {
		if f, ok := first[vals[2*p+1]]; ok {
			ep.nodeOf[p] = f
		} else {
			first[vals[2*p+1]], ep.nodeOf[p] = p, p
		}
		peers[p] = strings.Split(vals[2*p], ",")
		if len(peers[p]) != len(t.Addrs()) {
			return fmt.Errorf("rank %d has %d tcp rails, this rank %d: set %s alike on every rank",
				p, len(peers[p]), len(t.Addrs()), config.EnvRails)
		}
		if vals[2*p+1] == job.Node {
			local = append(local, p)
			if p != job.Rank {
				neighbours = append(neighbours, p)
				cpuKeys = append(cpuKeys, cpusKey(p))
			}
		}
	}
	ep.nodeRanks = local
	lists, err := boot.GetAll(ctx, job.KV, cpuKeys)
	if err != nil {
		return fmt.Errorf("CPUs of this node's ranks: %w", err)
	}
	for i, list := range lists {
		cpus, _ := topo.ParseCPUList(list) // unknown on error: no cache-free tier
		ep.cpus[neighbours[i]] = cpus
	}
	ep.cpus[job.Rank] = mine
	if slices.Contains(cfg.Transports, "shm") {
		s, err := setupShm(ctx, ep, job, cfg, local)
		if err != nil {
			return err
		}
		if s != nil {
			for _, p := range local {
				if p != job.Rank {
					t.Skip(p)
				}
			}
		}
	}
	return t.Connect(ctx, peers)
}

// setupShm creates this rank's segment, maps its node peers' and removes
// the files once every rank has them mapped (so a crash leaves nothing
// behind). Every rank takes part in the two fences, even alone on its
// node.
func setupShm(ctx context.Context, ep *Endpoint, job *boot.Job, cfg config.Config, local []int) (*shm.Transport, error) {
	var s *shm.Transport
	if len(local) > 1 && shmUsable(shm.Supported(), job.Rank, local, os.Stderr) {
		var err error
		s, err = shm.New(shm.Config{
			Rank: job.Rank, Job: job.ID, Local: local, Handler: ep.Eng,
			RingSize: cfg.Shm.Ring, ChunkSize: cfg.Shm.Chunk, Budget: cfg.Shm.Budget, NoCMA: cfg.Shm.NoCMA,
			Queue: shm.QueueModeOf(cfg.Shm.Queue),
			// A second processor for large pulls only if ranks leave one free.
			ParallelPull: job.LocalSize < runtime.NumCPU(),
		})
		if err != nil {
			return nil, err
		}
	}
	fail := func(err error) (*shm.Transport, error) {
		if s != nil {
			s.Close()
		}
		return nil, err
	}
	if err := job.KV.Fence(ctx); err != nil {
		return fail(fmt.Errorf("shared memory set-up: %w", err))
	}
	if s != nil {
		if err := s.Connect(ctx); err != nil {
			return fail(err)
		}
	}
	if err := job.KV.Fence(ctx); err != nil {
		return fail(fmt.Errorf("shared memory set-up: %w", err))
	}
	if s != nil {
		s.Unlink()
		ep.AttachShm(s, local)
	}
	return s, nil
}

func nodeKey(rank int) string { return fmt.Sprintf("node/%d", rank) }

func cpusKey(rank int) string { return fmt.Sprintf("cpus/%d", rank) }

func tcpKey(rank int) string { return fmt.Sprintf("tcp/%d", rank) }
