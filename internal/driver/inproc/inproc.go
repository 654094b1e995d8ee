// Package inproc is the driver for ranks that are goroutines of one process
// (commtune.Local) and for every rank's messages to itself. A Post delivers
// synchronously into the peer's handler: a Packet's bytes are read during
// the call, a Put is copied once, straight from the sender's buffer into the
// receiver's.
package inproc

import (
	"errors"
	"fmt"
	"sync"

	"github.com/commtune/commtune/internal/driver"
)

// MaxPacket is the largest Packet body an in-process rail accepts.
const MaxPacket = 64 << 20

// Fabric connects the ranks of one process.
type Fabric struct {
	mu       sync.RWMutex
	handlers []driver.Handler
	gone     []error // why a rank left (nil while it is attached)
}

// NewFabric returns a fabric for n ranks.
func NewFabric(n int) *Fabric {
	return &Fabric{handlers: make([]driver.Handler, n), gone: make([]error, n)}
}

// Attach joins rank to the fabric with the handler that receives for it and
// returns its transport, whose rails reach every other rank.
func (f *Fabric) Attach(rank int, h driver.Handler) *Transport {
	f.mu.Lock()
	f.handlers[rank] = h
	f.mu.Unlock()
	t := &Transport{f: f, rank: rank, rails: make([]*rail, len(f.handlers))}
	for p := range t.rails {
		if p != rank {
			t.rails[p] = &rail{f: f, from: rank, to: p}
		}
	}
	return t
}

// handler returns the handler of rank to, or why it is gone. A rank
// that failed sends nothing more, as a crashed process would not.
func (f *Fabric) handler(from, to int) (driver.Handler, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if err := f.gone[to]; err != nil {
		return nil, err
	}
	if err := f.gone[from]; err != nil {
		return nil, err
	}
	if f.handlers[to] == nil {
		return nil, fmt.Errorf("inproc: rank %d not attached", to)
	}
	return f.handlers[to], nil
}

// leave detaches rank and tells every other attached rank it is lost.
func (f *Fabric) leave(rank int, why error) {
	f.mu.Lock()
	if f.gone[rank] != nil {
		f.mu.Unlock()
		return
	}
	f.gone[rank] = why
	var hs []driver.Handler
	for p, h := range f.handlers {
		if p != rank && h != nil && f.gone[p] == nil {
			hs = append(hs, h)
		}
	}
	f.mu.Unlock()
	for _, h := range hs {
		h.PeerLost(rank, why)
	}
}

// Transport is one rank's view of the fabric.
type Transport struct {
	f     *Fabric
	rank  int
	rails []*rail
}

// Name returns "inproc".
func (t *Transport) Name() string { return "inproc" }

// Rails returns the rail to peer, or nil for the rank itself.
func (t *Transport) Rails(peer int) []driver.Rail {
	if peer < 0 || peer >= len(t.rails) || t.rails[peer] == nil {
		return nil
	}
	return []driver.Rail{t.rails[peer]}
}

// Close leaves the fabric in an orderly way: the others see
// driver.ErrPeerClosed.
func (t *Transport) Close() error {
	t.f.leave(t.rank, fmt.Errorf("inproc: %w", driver.ErrPeerClosed))
	return nil
}

// Fail leaves the fabric abnormally, as a crashed rank would: the others
// see err.
func (t *Transport) Fail(err error) {
	t.f.leave(t.rank, fmt.Errorf("inproc: rank %d failed: %w", t.rank, err))
}

// rail is a one-way in-process connection.
type rail struct {
	f        *Fabric
	from, to int
	scratch  []byte // flattens multi-part packets; one frame at a time
}

func (r *rail) Caps() driver.Caps {
	return driver.Caps{Transport: "inproc", Local: true, MaxPacket: MaxPacket, Iovec: true, SingleCopy: true}
}

func (r *rail) Peer() int { return r.to }

func (r *rail) Post(fr *driver.Frame) (bool, error) {
	h, err := r.f.handler(r.from, r.to)
	if err != nil {
		return false, err
	}
	return deliver(h, r.from, fr, &r.scratch)
}

// deliver hands fr to h as coming from rank from, synchronously.
func deliver(h driver.Handler, from int, fr *driver.Frame, scratch *[]byte) (bool, error) {
	switch fr.Kind {
	case driver.Packet:
		body := flatten(fr.Iov, scratch)
		if err := h.Packet(from, body); err != nil {
			return false, err
		}
		return true, nil
	case driver.Put:
		n := fr.Len()
		// Both sides may be in pieces (a send and a receive made of
		// segments): each piece of the region takes the next bytes of the
		// iovec, wherever they start.
		iov, pos := fr.Iov, 0 // pos: bytes of iov[0] already copied
		err := driver.Place(h, from, fr.Region, fr.Offset, n, func(dst []byte) error {
			for len(dst) > 0 {
				k := copy(dst, iov[0][pos:])
				dst, pos = dst[k:], pos+k
				if pos == len(iov[0]) {
					iov, pos = iov[1:], 0
				}
			}
			return nil
		})
		if err != nil {
			return false, err
		}
		h.PutDone(from, fr.Region, fr.Offset, n)
		return true, nil
	}
	return false, errors.New("inproc: unknown frame kind")
}

// flatten returns the packet as one slice: the single part itself when there
// is one (no copy), else the parts gathered into scratch.
func flatten(iov [][]byte, scratch *[]byte) []byte {
	if len(iov) == 1 {
		return iov[0]
	}
	b := (*scratch)[:0]
	for _, p := range iov {
		b = append(b, p...)
	}
	*scratch = b
	return b
}

// Self returns the rail a rank uses to send to itself, delivering into h.
func Self(rank int, h driver.Handler) driver.Rail {
	return &selfRail{rank: rank, h: h}
}

type selfRail struct {
	rank    int
	h       driver.Handler
	scratch []byte
}

func (s *selfRail) Caps() driver.Caps {
	return driver.Caps{Transport: "self", Local: true, MaxPacket: MaxPacket, Iovec: true, SingleCopy: true}
}

func (s *selfRail) Peer() int { return s.rank }

func (s *selfRail) Post(fr *driver.Frame) (bool, error) {
	return deliver(s.h, s.rank, fr, &s.scratch)
}
