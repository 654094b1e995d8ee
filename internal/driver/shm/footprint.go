package shm

// Footprint is the shared memory one rank's inbound segment holds on a
// node of LocalRanks ranks (docs/wire-shm.md, "Linking" and "Inbound
// queue"): its header and queue pages from the start, then, for each peer
// that has a ring to it, a ring header page and the part of the ring that
// peer's traffic has reached (a step of populateStep first, growing only
// as its traffic has more in flight), the rings' growth together bounded
// by the budget; on the queue path, also the rank's own fragment pool,
// which grows with what it has in flight to all its peers at once.
type Footprint struct {
	LocalRanks int   // ranks on the node, this one included
	RingSize   int   // each ring's capacity (0 on the queue path: no ring data)
	Budget     int   // bytes the rings may grow to together (0 on the queue path)
	Queue      bool  // pairs start on the inbound queue
	Rings      int   // peers that may get a ring: all, or maxFastBoxes fast boxes on the queue path
	PoolFirst  int64 // the pool's first step of each size (0 without the queue)
	PoolMax    int64 // the most the pool grows to (0 without the queue)
	AtStart    int64 // before any message: the header and queue pages
	PeerFirst  int64 // for a peer with a ring that sent a few small messages (its fast box alone on the queue path)
	PeerMax    int64 // for a peer whose traffic went round its whole ring
	// Talking is with every other local rank sending to this one, the
	// rings grown as far as the budget allows and the pool at its first
	// step: the most a rank holds unless records force rings past the
	// budget, or it has more than a step of fragments in flight at once.
	Talking int64
	// Max is with every ring whole and the pool grown to its limit:
	// records past the budget force a ring to room for two of them (four
	// chunks of a large message), so only records of a quarter of the
	// ring reach it.
	Max int64
}

// FootprintFor returns the footprint with localRanks ranks on the node,
// and ringSize, chunkSize, budget and queue as Config takes them (0: the
// defaults, which depend on localRanks).
func FootprintFor(localRanks, ringSize, chunkSize, budget int, queue QueueMode) (Footprint, error) {
	cfg := Config{Local: make([]int, max(localRanks, 1)), RingSize: ringSize, ChunkSize: chunkSize, Budget: budget, Queue: queue}
	if err := cfg.sizeRings(); err != nil {
		return Footprint{}, err
	}
	rings := max(localRanks-1, 0)
	step := int64(min(populateStep, cfg.RingSize))
	f := Footprint{
		LocalRanks: localRanks,
		RingSize:   cfg.RingSize,
		Budget:     cfg.Budget,
		AtStart:    headerPages,
		PeerFirst:  pageSize + step,
		PeerMax:    pageSize + int64(cfg.RingSize),
	}
	if cfg.usesQueue() && rings > 0 {
		// Rings there are fast boxes: their header pages alone.
		f.Queue = true
		rings = min(rings, maxFastBoxes)
		f.PeerFirst, f.PeerMax, f.RingSize, f.Budget = pageSize, pageSize, 0, 0
		f.PoolFirst = int64(poolBytes(smallStep, min(poolStep, cfg.PoolSlots)))
		f.PoolMax = int64(poolBytes(smallPerLarge*cfg.PoolSlots, cfg.PoolSlots))
	}
	f.Rings = rings
	r := int64(rings)
	f.Max = f.AtStart + r*f.PeerMax + f.PoolMax
	f.Talking = f.AtStart + r*pageSize + min(r*int64(f.RingSize), max(int64(f.Budget), r*step)) + f.PoolFirst
	return f, nil
}
