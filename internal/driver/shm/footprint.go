package shm

// Footprint is the shared memory one rank's inbound segment holds on a
// node of LocalRanks ranks (docs/wire-shm.md, "Linking"): its header page
// from the start, then, for each peer that sends it something, a ring
// header page and the part of the ring that peer's traffic has reached
// (a step of populateStep first, growing only as its traffic has more in
// flight), the rings' growth together bounded by the budget.
type Footprint struct {
	LocalRanks int   // ranks on the node, this one included
	RingSize   int   // each ring's capacity
	Budget     int   // bytes the rings may grow to together
	AtStart    int64 // before any message: the header page
	PeerFirst  int64 // for a peer that sent a few small messages
	PeerMax    int64 // for a peer whose traffic went round its whole ring
	// Talking is with every other local rank sending to this one, the
	// rings grown as far as the budget allows: the most a rank holds
	// unless records force rings past the budget.
	Talking int64
	// Max is with every ring whole: records past the budget force a ring
	// to room for two of them (four chunks of a large message), so only
	// records of a quarter of the ring reach it.
	Max int64
}

// FootprintFor returns the footprint with localRanks ranks on the node,
// and ringSize, chunkSize and budget as Config takes them (0: the
// defaults, which depend on localRanks).
func FootprintFor(localRanks, ringSize, chunkSize, budget int) (Footprint, error) {
	cfg := Config{Local: make([]int, max(localRanks, 1)), RingSize: ringSize, ChunkSize: chunkSize, Budget: budget}
	if err := cfg.sizeRings(); err != nil {
		return Footprint{}, err
	}
	peers := int64(max(localRanks-1, 0))
	step := int64(min(populateStep, cfg.RingSize))
	f := Footprint{
		LocalRanks: localRanks,
		RingSize:   cfg.RingSize,
		Budget:     cfg.Budget,
		AtStart:    pageSize,
		PeerFirst:  pageSize + step,
		PeerMax:    pageSize + int64(cfg.RingSize),
	}
	f.Max = f.AtStart + peers*f.PeerMax
	f.Talking = min(f.Max, f.AtStart+peers*pageSize+max(int64(cfg.Budget), peers*step))
	return f, nil
}
