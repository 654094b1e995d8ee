package shm

import (
	"context"
	"errors"
	"fmt"
	"github.com/commtune/commtune/internal/observe"
	"log/slog"
	"math/bits"
	"os"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/commtune/commtune/internal/driver"
	"github.com/commtune/commtune/internal/setting"
)

// Defaults for Config.
const (
	// DefaultRingSize is each ring's capacity. Measured here (copy method,
	// ping-pong), 2 MiB rings with 128 KiB chunks move 4 MiB at 31–32 GB/s,
	// 1 MiB rings 26 GB/s and 512 KiB rings 9 GB/s: with sixteen chunks in
	// flight sender and receiver copy concurrently, each chunk still in
	// cache. Nodes with many ranks get smaller rings (ringBudget).
	DefaultRingSize = 2 << 20
	// DefaultChunkSize is how much of a large message one ring record
	// carries with the copy methods. Seed 004 §2.1 notes MPICH uses 64 KiB
	// buffers; here 128–512 KiB measure alike and 128 KiB is best below
	// 4 MiB.
	DefaultChunkSize = 128 << 10
	// ringBudget bounds the capacity of one rank's inbound rings together:
	// DefaultRingSize shrinks (to at least 256 KiB) when more local senders
	// would exceed it.
	ringBudget = 64 << 20
	// DefaultBudget bounds the memory one rank's inbound rings take
	// together as their traffic grows them (ring.claim), up to 16 ranks on
	// a node: seven whole rings of the default size, so that up to eight
	// ranks every ring can grow whole. With more ranks each gets an equal
	// share of nodeBudget, at least MinBudget: a node's rings then hold
	// nodeBudget, not a ring per pair that talks (with 64 ranks exchanging
	// 16 KiB with every other, 4 GB of shared memory with every ring
	// whole, 1.1 GB with 16 MiB per rank, 0.4 GB with 4 MiB). A ring past
	// the budget grows only to what its records need to move on.
	DefaultBudget = 16 << 20
	// MinBudget is the least default budget, however many ranks: four
	// rings of 256 KiB, the least capacity the defaults give.
	MinBudget  = 1 << 20
	nodeBudget = 256 << 20
	// MinRingSize and MaxRingSize bound Config.RingSize. A ring holds whole
	// pages; records carry u32 lengths and are at most a quarter of the
	// ring, and 1 GiB keeps them far from that limit (a segment holds a
	// ring per local sender, so larger rings would not fit /dev/shm anyway).
	MinRingSize = pageSize
	MaxRingSize = 1 << 30
)

// Config describes one rank's end of the node's shared memory.
type Config struct {
	Rank    int    // world rank
	Job     string // job id: names the files
	Local   []int  // world ranks on this node, this one included
	Handler driver.Handler
	// Dir holds the segments and pipes; default /dev/shm.
	Dir string
	// RingSize is each ring's capacity, a power of two from MinRingSize to
	// MaxRingSize; default DefaultRingSize, smaller when many local ranks
	// share the node, and never under four times ChunkSize.
	RingSize int
	// ChunkSize is the most data one ring record carries for the copy
	// methods, at most RingSize/4; default DefaultChunkSize, or RingSize/4
	// when that is smaller.
	ChunkSize int
	// Budget bounds the bytes of memory this rank's inbound rings take
	// together beyond what their records force (docs/wire-shm.md,
	// "Linking"); at least a page, default DefaultBudget up to 16 local
	// ranks, then a share of 256 MiB per node (at least MinBudget).
	Budget int
	// NoCMA pretends process_vm_readv is forbidden (tests, and users who
	// want it off).
	NoCMA bool
	// NoVmsplice skips creating the pipes the vmsplice method needs.
	NoVmsplice bool
	// ParallelPull reads large single-copy pulls in two concurrent halves
	// (pull.go); set it only when this rank may use a second processor.
	ParallelPull bool
	// Queue says whether pairs start on the receiver's inbound queue
	// (queue.go); default QueueAuto: on nodes of more than QueueRanks.
	Queue QueueMode
	// PoolSlots is the most large fragments this rank's pool grows to on
	// the queue path, with smallPerLarge times as many small ones;
	// default DefaultPoolSlots.
	PoolSlots int
	// Logger receives the one line saying CMA is unavailable, and
	// protocol violations. Default slog.Default().
	Logger *slog.Logger
}

// usesQueue reports whether pairs start on the inbound queue.
func (cfg *Config) usesQueue() bool {
	return cfg.Queue == QueueOn || (cfg.Queue == QueueAuto && len(cfg.Local) > QueueRanks)
}

// Transport is one rank's shared-memory end.
type Transport struct {
	cfg   Config
	log   *slog.Logger
	in    *segment  // our inbound segment: the rings local peers write
	rings []*inRing // by ring index in `in`
	// live are the rings whose senders linked them (rail.link): the only
	// ones polled. linksSeen is the links word when live was last brought
	// up to date (under liveMu).
	live      atomic.Pointer[[]*inRing]
	liveMu    sync.Mutex
	linksSeen atomic.Uint32
	shared    atomic.Int64  // bytes of the live rings with memory (SharedMemory)
	peers     map[int]*rail // by world rank
	rails     map[int][]driver.Rail

	// The queue path (queue.go), when this rank has a pool: our inbound
	// queue, taken in by one goroutine at a time (qmu), dead once found
	// corrupt; our pool; the rails by local index (fragment owners).
	q       *fifo
	qmu     sync.Mutex
	qdead   atomic.Bool
	pool    *outPool
	byIndex []*rail

	closing   atomic.Bool
	activity  atomic.Uint64 // waits ended with their message (rail.Attend)
	wg        sync.WaitGroup
	watch     *watcher
	closeOnce sync.Once
	puller    puller
	files     []string // created by us; removed at Unlink or Close
	bell      *bell    // wakes the consumer (bell_linux.go)
}

// inRing is an inbound ring and the lock its consumers share. r and fb
// are made when the sender links the ring (Transport.refreshLive).
type inRing struct {
	r     *ring
	fb    *fbox // the pair's fast box, drained before the ring
	index int   // in our segment
	peer  int   // world rank writing it
	rail  *rail // our rail to that peer (delivery context)
	// linked is set once r and fb are made; bye once the sender's
	// goodbye without a link is delivered (under liveMu).
	linked atomic.Bool
	bye    bool
	mu     sync.Mutex
}

// sizeRings fills RingSize and ChunkSize, each from the other when only
// one is set, so that either set alone is valid: a small ring takes a
// smaller chunk, a large chunk a larger ring. Only the two set together
// can conflict.
func (cfg *Config) sizeRings() error {
	switch {
	case cfg.Budget == 0:
		cfg.Budget = min(DefaultBudget, max(MinBudget, nodeBudget/len(cfg.Local)))
	case cfg.Budget < pageSize:
		return setting.Bad(setting.Field("shm.Config.Budget", cfg.Budget), "at least %d bytes (0 for the default)", pageSize)
	}
	if cfg.ChunkSize < 0 || cfg.ChunkSize > MaxRingSize/4 {
		return setting.Bad(setting.Field("shm.Config.ChunkSize", cfg.ChunkSize), "a size from 1 to %d bytes (0 for the default)", MaxRingSize/4)
	}
	if cfg.RingSize == 0 {
		least := 256 << 10
		if cfg.usesQueue() {
			least = MinRingSize // only their header pages are used: fast boxes
		}
		if cfg.ChunkSize > 0 {
			least = max(least, 1<<bits.Len(uint(4*cfg.ChunkSize-1))) // a power of two ≥ 4 chunks
		}
		cfg.RingSize = max(DefaultRingSize, least)
		if cfg.usesQueue() {
			cfg.RingSize = least
		}
		for cfg.RingSize > least && cfg.RingSize*(len(cfg.Local)-1) > ringBudget {
			cfg.RingSize /= 2
		}
	}
	if cfg.RingSize < MinRingSize || cfg.RingSize > MaxRingSize || cfg.RingSize&(cfg.RingSize-1) != 0 {
		return setting.Bad(setting.Field("shm.Config.RingSize", cfg.RingSize), "a power of two from %d to %d bytes", MinRingSize, MaxRingSize)
	}
	if cfg.ChunkSize == 0 {
		cfg.ChunkSize = min(DefaultChunkSize, cfg.RingSize/4)
	}
	switch {
	case cfg.Queue < QueueAuto || cfg.Queue > QueueOff:
		return setting.Bad(setting.Field("shm.Config.Queue", int(cfg.Queue)), "QueueAuto, QueueOn or QueueOff")
	case cfg.PoolSlots == 0:
		cfg.PoolSlots = DefaultPoolSlots
	case cfg.PoolSlots < 1 || cfg.PoolSlots > maxPoolSlots:
		return setting.Bad(setting.Field("shm.Config.PoolSlots", cfg.PoolSlots), "from 1 to %d fragments (0 for the default)", maxPoolSlots)
	}
	if cfg.ChunkSize > cfg.RingSize/4 {
		return setting.Conflict(setting.Field("shm.Config.ChunkSize", cfg.ChunkSize), setting.Field("shm.Config.RingSize", cfg.RingSize),
			"a chunk of at most a quarter of the ring (%d bytes)", cfg.RingSize/4)
	}
	return nil
}

// New creates this rank's inbound segment (and the pipes the vmsplice
// method reads from). Every local rank must have called New before any
// calls Connect: exchange a fence in between. Off Linux it returns
// Supported's error.
func New(cfg Config) (*Transport, error) {
	if err := Supported(); err != nil {
		return nil, err
	}
	if cfg.Dir == "" {
		cfg.Dir = DefaultDir
	}
	if err := cfg.sizeRings(); err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Handler == nil || !slices.Contains(cfg.Local, cfg.Rank) {
		return nil, errors.New("shm: a handler and a local rank list containing this rank are required")
	}
	var senders []int
	for _, r := range cfg.Local {
		if r != cfg.Rank {
			senders = append(senders, r)
		}
	}
	t := &Transport{cfg: cfg, log: cfg.Logger, peers: map[int]*rail{}, rails: map[int][]driver.Rail{}}
	t.live.Store(&[]*inRing{})
	if len(senders) == 0 {
		return t, nil
	}
	path := SegmentPath(cfg.Dir, cfg.Job, cfg.Rank)
	poolSlots := 0
	if cfg.usesQueue() {
		poolSlots = cfg.PoolSlots
	}
	seg, err := createSegment(path, cfg.Rank, senders, cfg.RingSize, cfg.Budget, poolSlots)
	if err != nil {
		return nil, err
	}
	t.in = seg
	if poolSlots > 0 {
		t.pool = newOutPool(seg.pool(), localIndex(cfg.Local, cfg.Rank))
	}
	t.files = append(t.files, path)
	bp := bellPath(cfg.Dir, cfg.Job, cfg.Rank)
	if t.bell, err = makeBell(bp); err != nil {
		t.removeFiles()
		seg.unmap()
		return nil, err
	}
	t.files = append(t.files, bp)
	publishProbe(seg)
	for i := range senders {
		t.rings = append(t.rings, &inRing{index: i, peer: seg.sender(i)})
	}
	return t, nil
}

// Connect maps every local peer's inbound segment, probes whether this rank
// may read their memory (CMA) and opens the pipes. Call it once every local
// rank has called New; then fence again and call Unlink.
func (t *Transport) Connect(ctx context.Context) error {
	if t.in == nil {
		return nil
	}
	pids := map[int]int{}
	cmaOK, cmaWhy := true, ""
	for i, ir := range t.rings {
		peerSeg, err := openSegment(SegmentPath(t.cfg.Dir, t.cfg.Job, ir.peer))
		if err != nil {
			return err
		}
		idx := peerSeg.ringFor(t.cfg.Rank)
		if idx < 0 || peerSeg.owner() != ir.peer {
			peerSeg.unmap()
			return fmt.Errorf("shm: rank %d's segment has no ring for rank %d", ir.peer, t.cfg.Rank)
		}
		rl := &rail{t: t, peer: ir.peer, seg: peerSeg, index: idx, in: ir, pid: peerSeg.pid(), bellFd: -1}
		ir.rail = rl
		// May we pull from this peer? Record the answer in our segment,
		// where the peer reads it before offering us its buffers.
		ok, why := false, "disabled by configuration (COMMTUNE_SHM_CMA=off)"
		if !t.cfg.NoCMA {
			ok, why = probeCMA(peerSeg)
		}
		if ok {
			t.in.mem[offCanPull+i] = 1
		} else if cmaOK {
			cmaOK, cmaWhy = false, why
		}
		if rl.bellFd, err = openBellWriter(bellPath(t.cfg.Dir, t.cfg.Job, ir.peer)); err != nil {
			return err
		}
		t.peers[ir.peer] = rl
		pids[ir.peer] = rl.pid
	}
	if err := t.connectQueues(); err != nil {
		return err
	}
	// One line per node: the lowest local rank speaks for the others.
	if !cmaOK && t.cfg.Rank == slices.Min(t.cfg.Local) {
		t.log.Warn("shm: single-copy transfers (CMA, process_vm_readv) are unavailable; large messages use the copy method", "reason", cmaWhy)
	}
	w, err := newWatcher(pids, t.peerGone)
	if err != nil {
		return err
	}
	t.watch = w
	return nil
}

// Unlink removes this rank's files once every local rank has mapped or
// opened them (after a fence following Connect): the mappings stay, and a
// crash from now on leaves nothing in the directory. It also finishes the
// rails (their capabilities need the peers' probe results) and starts the
// consumer.
func (t *Transport) Unlink() {
	t.removeFiles()
	for _, rl := range t.peers {
		rl.finish()
		t.rails[rl.peer] = []driver.Rail{rl}
	}
	if t.in != nil {
		t.wg.Add(1)
		go observe.Label(t.cfg.Rank, "shm-consumer", t.consume)
	}
}

func (t *Transport) removeFiles() {
	for _, f := range t.files {
		os.Remove(f)
	}
	t.files = nil
}

// Name returns "shm".
func (t *Transport) Name() string { return "shm" }

// Rails returns the rail to a local peer, or nil.
func (t *Transport) Rails(peer int) []driver.Rail { return t.rails[peer] }

// peerGone reports a local peer whose process ended.
func (t *Transport) peerGone(peer int) {
	if t.closing.Load() {
		return
	}
	rl := t.peers[peer]
	if rl == nil {
		return
	}
	t.refreshLive() // a goodbye without a link is reported there
	if !rl.lost.CompareAndSwap(false, true) {
		return
	}
	// Deliver what it wrote before dying, then report it. Wait for a
	// goroutine draining the queue or the ring now: it may be holding the
	// Bye record.
	if t.q != nil {
		t.qmu.Lock()
		t.drainQueueLocked()
		t.qmu.Unlock()
	}
	if rl.in != nil && rl.in.rail != nil && rl.in.linked.Load() {
		rl.in.mu.Lock()
		t.drainLocked(rl.in)
		rl.in.mu.Unlock()
	}
	err := fmt.Errorf("shm: rank %d's process ended without saying goodbye", peer)
	if rl.byeSeen.Load() {
		err = fmt.Errorf("shm: %w", driver.ErrPeerClosed)
	}
	rl.fail(err)
	t.cfg.Handler.PeerLost(peer, err)
}

// Close says goodbye to every peer (a Bye record after what is queued),
// stops the goroutines and unmaps the segments. Peers see an orderly close.
func (t *Transport) Close() error {
	t.closeOnce.Do(func() {
		for _, rl := range t.peers {
			rl.bye()
		}
		t.closing.Store(true)
		if t.bell != nil {
			t.bell.ring()
		}
		if t.watch != nil {
			t.watch.close()
		}
		t.wg.Wait()
		for _, rl := range t.peers {
			rl.close()
		}
		if t.puller.work != nil {
			close(t.puller.work)
		}
		t.removeFiles()
		if t.bell != nil {
			t.bell.close()
		}
		if t.in != nil {
			t.in.unmap()
		}
	})
	return nil
}
