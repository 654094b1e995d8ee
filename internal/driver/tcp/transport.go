// Package tcp is commtune's inter-node driver: one TCP connection per peer
// and rail, authenticated with the job secret before any frame is accepted,
// carrying length-prefixed Packet, Put and Bye frames (docs/wire-tcp.md).
//
// A Post writes its frame with one non-blocking writev in the caller's
// goroutine; whatever does not fit in the socket buffer is finished by the
// rail's writer goroutine, which then reports Handler.Idle. Each connection
// has a reader goroutine that delivers Packets to the Handler and reads Put
// payloads straight into the memory the Handler's Region returns.
package tcp

import (
	"context"
	"fmt"
	"github.com/commtune/commtune/internal/observe"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/commtune/commtune/internal/auth"
	"github.com/commtune/commtune/internal/driver"
)

// maxPendingHandshakes bounds the accepted connections still handshaking;
// the accept loop waits for a slot, so a flood of idle connections costs
// time (each at most the handshake timeout), not memory.
const maxPendingHandshakes = 64

// Transport is one rank's set of TCP rails to every other rank of the job.
// Make one with Listen, publish Addrs, then build the mesh with Connect.
type Transport struct {
	cfg      Config
	h        driver.Handler
	log      *slog.Logger
	hs       handshakeConfig
	putChunk int // most payload bytes per Put frame; lowered by tests
	// sendBuffer fixes SO_SNDBUF (0: autotuning): multirailSendBuffer
	// when there are several rails.
	sendBuffer int

	ctx    context.Context // canceled when Close begins
	cancel context.CancelFunc

	lns      []*net.TCPListener // one per rail
	addrs    []string
	names    []string // each rail's identity (driver.Caps.Name)
	peers    []*peer  // by rank; nil at our own
	expected int      // rails the full mesh has: (Size-1) × rails

	hsSlots chan struct{} // one token per accepted connection handshaking

	mu          sync.Mutex
	closing     bool
	all         []*rail                   // every registered rail
	handshaking map[*net.TCPConn]struct{} // accepted, not yet registered
	connected   int
	meshed      chan struct{} // closed when connected == expected
	meshDone    bool

	wg        sync.WaitGroup // every goroutine the transport started
	closeOnce sync.Once
}

var _ driver.Transport = (*Transport)(nil)

// Listen opens one listener per Config.ListenAddrs entry (one per rail) and
// starts accepting connections from higher ranks. Connections are
// authenticated as they arrive; call Connect to dial the lower ranks and
// wait for the whole mesh.
func Listen(cfg Config) (*Transport, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	nrails := len(cfg.ListenAddrs)
	t := &Transport{
		cfg: cfg,
		h:   cfg.Handler,
		log: cfg.Logger,
		hs: handshakeConfig{
			secret:    cfg.Secret,
			rank:      cfg.Rank,
			size:      cfg.Size,
			maxPacket: cfg.MaxPacket,
			challenge: auth.NewChallenge,
		},
		putChunk:    defaultPutChunk,
		ctx:         ctx,
		cancel:      cancel,
		peers:       make([]*peer, cfg.Size),
		expected:    (cfg.Size - 1) * nrails,
		hsSlots:     make(chan struct{}, maxPendingHandshakes),
		handshaking: make(map[*net.TCPConn]struct{}),
		meshed:      make(chan struct{}),
	}
	for i, addr := range cfg.ListenAddrs {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			for _, l := range t.lns {
				l.Close()
			}
			cancel()
			return nil, fmt.Errorf("tcp: listening on rail %d (%s): %w", i, addr, err)
		}
		t.lns = append(t.lns, ln.(*net.TCPListener))
		t.addrs = append(t.addrs, ln.Addr().String())
		t.names = append(t.names, railName(ln.Addr(), i))
	}
	if nrails > 1 {
		t.sendBuffer = multirailSendBuffer
	}
	for rank := range t.peers {
		if rank != cfg.Rank {
			t.peers[rank] = &peer{rank: rank, rails: make([]*rail, nrails), reserved: make([]bool, nrails)}
		}
	}
	t.checkMeshedLocked()
	for i, ln := range t.lns {
		t.wg.Add(1)
		go t.acceptLoop(ln, i)
	}
	return t, nil
}

// checkMeshedLocked closes meshed once every expected rail is up.
func (t *Transport) checkMeshedLocked() {
	if !t.meshDone && t.connected == t.expected {
		t.meshDone = true
		close(t.meshed)
	}
}

// Skip leaves ranks out of the mesh (another transport reaches them; every
// rank must skip symmetrically): no connection with them is expected,
// dialled or accepted. Call it before Connect.
func (t *Transport) Skip(ranks ...int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, rank := range ranks {
		if rank < 0 || rank >= len(t.peers) || t.peers[rank] == nil || t.peers[rank].skipped {
			continue
		}
		t.peers[rank].skipped = true
		t.expected -= len(t.lns)
	}
	t.checkMeshedLocked()
}

func (t *Transport) skipped(rank int) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.peers[rank] != nil && t.peers[rank].skipped
}

// Addrs returns the actual listen address of each rail (ports resolved), to
// publish to the other ranks.
func (t *Transport) Addrs() []string { return append([]string(nil), t.addrs...) }

// Name returns "tcp".
func (t *Transport) Name() string { return "tcp" }

// Rails returns the rails to peer, by rail index, once all of them are up;
// nil for ourselves, an unknown rank, or a peer not yet connected. The
// slice is shared: do not modify it.
func (t *Transport) Rails(peer int) []driver.Rail {
	if peer < 0 || peer >= len(t.peers) || t.peers[peer] == nil {
		return nil
	}
	if v := t.peers[peer].view.Load(); v != nil {
		return *v
	}
	return nil
}

// register adopts an authenticated connection as the rail res.rail to
// res.peer and starts its reader and writer.
func (t *Transport) register(nc *net.TCPConn, res handshakeResult, reserved bool) error {
	p := t.peers[res.peer]
	r, err := newRail(t, p, res.rail, nc, res.maxPacket)
	t.mu.Lock()
	defer t.mu.Unlock()
	if reserved {
		p.reserved[res.rail] = false
	}
	if err != nil {
		return err
	}
	if err := t.admitLocked(res.peer, res.rail); err != nil {
		return err
	}
	p.rails[res.rail] = r
	t.all = append(t.all, r)
	t.connected++
	complete := true
	for _, pr := range p.rails {
		complete = complete && pr != nil
	}
	if complete {
		view := make([]driver.Rail, len(p.rails))
		for i, pr := range p.rails {
			view[i] = pr
		}
		p.view.Store(&view)
	}
	t.checkMeshedLocked()
	t.wg.Add(2)
	go observe.Label(t.cfg.Rank, "tcp-reader", r.readLoop)
	go observe.Label(t.cfg.Rank, "tcp-writer", r.writeLoop)
	t.log.Debug("tcp: rail up", "rank", res.peer, "rail", res.rail, "remote", r.remote)
	return nil
}

// reserve says whether a connection from peer on rail may join the mesh
// and, if so, holds the rail for it until register or release: the
// acceptor tells the connector it is in before registering the rail, so a
// second connection for the same rail must be refused then, not after
// both were told yes.
func (t *Transport) reserve(peer, rail int) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.admitLocked(peer, rail); err != nil {
		return err
	}
	t.peers[peer].reserved[rail] = true
	return nil
}

// release gives up a reservation whose handshake failed.
func (t *Transport) release(peer, rail int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.peers[peer].reserved[rail] = false
}

func (t *Transport) admitLocked(peer, rail int) error {
	p := t.peers[peer]
	switch {
	case t.closing:
		return errClosing
	case p.err() != nil:
		return fmt.Errorf("rank %d: %w", peer, p.err())
	case p.skipped:
		return fmt.Errorf("rank %d: %w", peer, errSkipped)
	case p.rails[rail] != nil || p.reserved[rail]:
		return errDuplicate
	}
	return nil
}

// Close shuts the transport down in an orderly way. Every connection gets a
// Bye after its frame in flight and has its write side shut; Close then
// waits, at most Config.CloseTimeout, for each peer to shut its side too, so
// that closing cannot reset a connection whose data the peer has not read.
// It returns once every goroutine the transport started has exited, and no
// Handler call happens after that. The Handler hears of no lost peer once
// Close has begun. Close is idempotent.
func (t *Transport) Close() error {
	t.closeOnce.Do(t.shutdown)
	return nil
}

func (t *Transport) shutdown() {
	t.mu.Lock()
	t.closing = true
	t.cancel()
	rails := append([]*rail(nil), t.all...)
	pending := make([]*net.TCPConn, 0, len(t.handshaking))
	for nc := range t.handshaking {
		pending = append(pending, nc)
	}
	t.mu.Unlock()

	for _, ln := range t.lns {
		ln.Close()
	}
	for _, nc := range pending {
		nc.Close()
	}
	for _, r := range rails {
		r.finish(jobBye)
	}
	deadline := time.NewTimer(t.cfg.CloseTimeout)
	defer deadline.Stop()
	expired := false
	for _, r := range rails {
		for _, done := range []chan struct{}{r.wdone, r.rdone} {
			if expired {
				break
			}
			select {
			case <-done:
			case <-deadline.C:
				expired = true
				t.log.Debug("tcp: close timed out waiting for peers", "timeout", t.cfg.CloseTimeout)
			}
		}
	}
	for _, r := range rails {
		r.fail(errClosing)
	}
	t.wg.Wait()
}
