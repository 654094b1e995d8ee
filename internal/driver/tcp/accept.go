package tcp

import (
	"errors"
	"fmt"
	"net"
	"time"
)

// acceptLoop accepts connections on rail's listener and authenticates each
// in its own goroutine, at most maxPendingHandshakes at once.
func (t *Transport) acceptLoop(ln *net.TCPListener, rail int) {
	defer t.wg.Done()
	for {
		select {
		case t.hsSlots <- struct{}{}:
		case <-t.ctx.Done():
			return
		}
		nc, err := ln.AcceptTCP()
		if err != nil {
			<-t.hsSlots
			if t.ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of file descriptors and the like: say so, back off, retry.
			t.log.Warn(fmt.Sprintf("tcp: accepting on rail %d: %v", rail, err))
			select {
			case <-time.After(100 * time.Millisecond):
			case <-t.ctx.Done():
				return
			}
			continue
		}
		if !t.track(nc) {
			nc.Close()
			<-t.hsSlots
			return
		}
		go t.acceptOne(nc, rail)
	}
}

// track records nc as handshaking (so Close can interrupt it) and counts its
// goroutine; it returns false once Close has begun.
func (t *Transport) track(nc *net.TCPConn) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closing {
		return false
	}
	t.handshaking[nc] = struct{}{}
	t.wg.Add(1)
	return true
}

// acceptOne authenticates one accepted connection and registers it as a
// rail; a connection that fails is closed and logged at Warn with the remote
// address and the reason.
func (t *Transport) acceptOne(nc *net.TCPConn, rail int) {
	defer t.wg.Done()
	defer func() { <-t.hsSlots }()
	defer func() {
		t.mu.Lock()
		delete(t.handshaking, nc)
		t.mu.Unlock()
	}()
	err := configure(nc, t.sendBuffer)
	var res handshakeResult
	held := -1 // the peer whose rail this handshake reserved
	admit := func(peer, rail int) error {
		if err := t.reserve(peer, rail); err != nil {
			return err
		}
		held = peer
		return nil
	}
	if err == nil {
		nc.SetDeadline(time.Now().Add(t.cfg.HandshakeTimeout))
		res, err = acceptHandshake(nc, &t.hs, rail, admit)
	}
	if err == nil {
		nc.SetDeadline(time.Time{})
		err = t.register(nc, res, true)
	} else if held >= 0 {
		t.release(held, rail)
	}
	if err != nil {
		nc.Close()
		if t.ctx.Err() == nil {
			t.log.Warn(fmt.Sprintf("tcp: rejected connection from %s: %v", nc.RemoteAddr(), err))
		}
	}
}
