package tcp

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"time"
)

// Dial retry backoff: a peer may not be listening yet when we start.
const (
	minDialBackoff = 10 * time.Millisecond
	maxDialBackoff = 500 * time.Millisecond
)

// Connect builds the full mesh: this rank dials every lower rank on every
// rail, while the accept loop takes connections from the higher ones.
// peerAddrs[rank][rail] is each rank's Addrs (our own entry and those of
// higher ranks are not used). Ranks passed to Skip are left out. It returns once every connection is up and
// authenticated; it fails at once on a connection the peer rejects or that
// fails authentication, and after Config.ConnectTimeout (or when ctx ends)
// with an error naming the ranks still missing. Once the mesh is complete,
// further calls return nil at once.
func (t *Transport) Connect(ctx context.Context, peerAddrs [][]string) error {
	select {
	case <-t.meshed:
		return nil // already connected (or a one-rank job)
	default:
	}
	rails := len(t.lns)
	if len(peerAddrs) != t.cfg.Size {
		return fmt.Errorf("tcp: %d address lists for a job of %d ranks", len(peerAddrs), t.cfg.Size)
	}
	for rank := range t.cfg.Rank {
		if !t.skipped(rank) && len(peerAddrs[rank]) != rails {
			return fmt.Errorf("tcp: rank %d has %d addresses, want one per rail (%d)", rank, len(peerAddrs[rank]), rails)
		}
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, t.cfg.ConnectTimeout)
	defer cancel()
	stop := context.AfterFunc(t.ctx, cancel) // Close interrupts Connect
	defer stop()

	d := dials{last: make(map[[2]int]error)}
	errc := make(chan error, t.cfg.Rank*rails)
	var wg sync.WaitGroup
	for rank := range t.cfg.Rank {
		if t.skipped(rank) {
			continue
		}
		for rail, addr := range peerAddrs[rank] {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := t.dial(ctx, rank, rail, addr, &d); err != nil {
					errc <- err
				}
			}()
		}
	}
	var err error
	select {
	case <-t.meshed:
	case err = <-errc:
	case <-ctx.Done():
		err = t.meshError(ctx, start, &d)
	}
	cancel()
	wg.Wait()
	return err
}

// dials records the last error of each (rank, rail) dial, for meshError.
type dials struct {
	mu   sync.Mutex
	last map[[2]int]error
}

func (d *dials) note(rank, rail int, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.last[[2]int{rank, rail}] = err
}

// dial connects to rank on rail at addr, retrying refused dials until ctx
// ends; it returns nil when ctx ends (Connect then reports what is
// missing) and an error for a connection that failed its handshake.
func (t *Transport) dial(ctx context.Context, rank, rail int, addr string, d *dials) error {
	dialer := net.Dialer{LocalAddr: t.localAddr(rail)}
	backoff := minDialBackoff
	for {
		c, err := dialer.DialContext(ctx, "tcp", addr)
		if err == nil {
			err = t.connectOne(ctx, c.(*net.TCPConn), rank, rail)
			if err == nil || ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("tcp: connecting to rank %d rail %d at %s: %w", rank, rail, addr, err)
		}
		d.note(rank, rail, err)
		timer := time.NewTimer(backoff)
		select {
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
			return nil
		}
		backoff = min(2*backoff, maxDialBackoff)
	}
}

// localAddr returns the address outgoing connections on rail bind to: the
// rail's listen IP when it names one, so that each rail's traffic leaves by
// its own interface; nil (any) for a wildcard listener.
func (t *Transport) localAddr(rail int) net.Addr {
	a := t.lns[rail].Addr().(*net.TCPAddr)
	if a.IP == nil || a.IP.IsUnspecified() {
		return nil
	}
	return &net.TCPAddr{IP: a.IP, Zone: a.Zone}
}

// connectOne authenticates a dialed connection and registers it.
func (t *Transport) connectOne(ctx context.Context, nc *net.TCPConn, rank, rail int) error {
	if err := configure(nc, t.sendBuffer); err != nil {
		nc.Close()
		return err
	}
	nc.SetDeadline(time.Now().Add(t.cfg.HandshakeTimeout))
	stop := context.AfterFunc(ctx, func() { nc.SetDeadline(time.Unix(1, 0)) })
	res, err := connectHandshake(nc, &t.hs, rank, rail)
	if !stop() && err == nil {
		err = ctx.Err()
	}
	if err == nil {
		nc.SetDeadline(time.Time{})
		err = t.register(nc, res, false)
	}
	if err != nil {
		nc.Close()
	}
	return err
}

// meshError describes an incomplete mesh: which ranks are missing rails,
// and the last dial error for those this rank dials.
func (t *Transport) meshError(ctx context.Context, start time.Time, d *dials) error {
	if t.ctx.Err() != nil {
		return fmt.Errorf("tcp: connect: %w", errClosing)
	}
	t.mu.Lock()
	var missing []string
	var details []string
	for _, p := range t.peers {
		if p == nil {
			continue
		}
		var rails []int
		for i, r := range p.rails {
			if r == nil {
				rails = append(rails, i)
			}
		}
		if len(rails) == 0 {
			continue
		}
		missing = append(missing, fmt.Sprint(p.rank))
		for _, rail := range rails {
			d.mu.Lock()
			err := d.last[[2]int{p.rank, rail}]
			d.mu.Unlock()
			if err != nil {
				details = append(details, fmt.Sprintf("rank %d rail %d: %v", p.rank, rail, err))
			}
		}
	}
	t.mu.Unlock()
	slices.Sort(details)
	msg := fmt.Sprintf("tcp: mesh incomplete after %v, no connection with rank(s) %s",
		time.Since(start).Round(time.Millisecond), strings.Join(missing, ", "))
	if len(details) > 0 {
		msg += " (" + strings.Join(details, "; ") + ")"
	}
	return fmt.Errorf("%s: %w", msg, context.Cause(ctx))
}
