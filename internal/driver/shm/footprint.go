package shm

// Footprint is the shared memory one rank's inbound segment holds on a
// node of LocalRanks ranks (docs/wire-shm.md, "Linking"): its header page
// from the start, then, for each peer that sends it something, a ring
// header page and the part of the ring that peer's traffic has reached
// (a step of populateStep first, growing only as its traffic has more in
// flight, up to the whole ring).
type Footprint struct {
	LocalRanks int   // ranks on the node, this one included
	RingSize   int   // each ring's capacity
	AtStart    int64 // before any message: the header page
	PeerFirst  int64 // for a peer that sent a few small messages
	PeerMax    int64 // for a peer whose traffic went round its ring
	Max        int64 // with every other local rank at PeerMax
}

// FootprintFor returns the footprint with localRanks ranks on the node,
// and ringSize and chunkSize as Config takes them (0: the defaults, which
// depend on localRanks).
func FootprintFor(localRanks, ringSize, chunkSize int) (Footprint, error) {
	cfg := Config{Local: make([]int, max(localRanks, 1)), RingSize: ringSize, ChunkSize: chunkSize}
	if err := cfg.sizeRings(); err != nil {
		return Footprint{}, err
	}
	f := Footprint{
		LocalRanks: localRanks,
		RingSize:   cfg.RingSize,
		AtStart:    pageSize,
		PeerFirst:  pageSize + int64(min(populateStep, cfg.RingSize)),
		PeerMax:    pageSize + int64(cfg.RingSize),
	}
	f.Max = f.AtStart + int64(max(localRanks-1, 0))*f.PeerMax
	return f, nil
}
