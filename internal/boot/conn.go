package boot

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"syscall"
	"time"
)

// maxQueued is how many replies may wait to be written to one connection
// before the server stops reading its requests: TCP backpressure bounds a
// rank that sends without reading. Answers to waiting GETs come on top, and
// are bounded by limits.waiting.
const maxQueued = 64

// conn is the server's side of one rank's connection: serve reads and
// applies requests, writeLoop sends replies from the outbox.
type conn struct {
	s      *Server
	nc     net.Conn
	rank   int
	joined bool

	mu     sync.Mutex
	cond   *sync.Cond // signals changes of outbox and done
	outbox []message
	done   bool // no more replies: writeLoop exits once outbox is empty or at once on error
}

func newConn(s *Server, nc net.Conn) *conn {
	c := &conn{s: s, nc: nc, rank: -1}
	c.cond = sync.NewCond(&c.mu)
	return c
}

func (c *conn) enqueue(m message) {
	c.mu.Lock()
	if !c.done {
		c.outbox = append(c.outbox, m)
		c.cond.Broadcast()
	}
	c.mu.Unlock()
}

// finish lets writeLoop drain the outbox and then close the connection.
func (c *conn) finish() {
	c.mu.Lock()
	c.done = true
	c.cond.Broadcast()
	c.mu.Unlock()
}

// close drops the connection at once.
func (c *conn) close() {
	c.nc.Close()
	c.mu.Lock()
	c.done, c.outbox = true, nil
	c.cond.Broadcast()
	c.mu.Unlock()
}

// waitRoom blocks while maxQueued replies are unsent (backpressure).
func (c *conn) waitRoom() {
	c.mu.Lock()
	for len(c.outbox) >= maxQueued && !c.done {
		c.cond.Wait()
	}
	c.mu.Unlock()
}

func (c *conn) writeLoop() {
	defer c.s.wg.Done()
	defer c.nc.Close()
	var buf []byte
	for {
		c.mu.Lock()
		for len(c.outbox) == 0 && !c.done {
			c.cond.Wait()
		}
		if len(c.outbox) == 0 {
			c.mu.Unlock()
			return
		}
		m := c.outbox[0]
		c.outbox[0] = message{} // let a sent VALUE's string go
		c.outbox = c.outbox[1:]
		c.cond.Broadcast()
		c.mu.Unlock()

		buf = appendFrame(buf[:0], &m)
		if _, err := c.nc.Write(buf); err != nil {
			c.close()
			return
		}
	}
}

func (c *conn) serve() {
	defer c.s.wg.Done()
	remote := c.nc.RemoteAddr().String()
	c.nc.SetDeadline(time.Now().Add(handshakeTimeout))
	rank, err := serverHandshake(c.nc, c.s.secret)
	if err != nil {
		c.s.log.Warn("kvs: rejected connection", "remote", remote, "err", err)
		c.close()
		c.forget()
		return
	}
	c.nc.SetDeadline(time.Time{})
	c.rank = int(rank)

	bye, err := c.readRequests()
	switch {
	case bye:
		c.finish() // send the BYE's OK, then close
	// A reset is how a killed rank's connection ends, like an EOF: its
	// loss is reported (the launcher says how it ended), not a protocol
	// fault to warn about.
	case err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) && !errors.Is(err, syscall.ECONNRESET):
		c.s.log.Warn("kvs: dropping connection", "rank", c.rank, "remote", remote, "err", err)
		c.finish() // send the ERR that says why, then close
	default:
		c.close()
	}
	if c.joined && !bye {
		c.s.apply(c, func(st *store) outcome { return st.lost(c.rank) })
	}
	c.forget()
}

// forget removes c from the server's tables.
func (c *conn) forget() {
	c.s.mu.Lock()
	delete(c.s.conns, c)
	if c.s.ranks[c.rank] == c {
		delete(c.s.ranks, c.rank)
	}
	c.s.mu.Unlock()
}

// readRequests applies requests until BYE (bye=true), the end of the
// stream, or a frame that breaks the protocol (answered with ERR).
func (c *conn) readRequests() (bye bool, err error) {
	br := bufio.NewReader(c.nc)
	buf := make([]byte, 4096)
	for {
		c.waitRoom()
		f, err := readFrame(br, buf)
		if err != nil {
			if errors.Is(err, ErrProtocol) {
				c.enqueue(*errReply(0, codeMalformed, "%v", err))
			}
			return false, err
		}
		m, err := decodeMessage(f)
		if err == nil && m.op.isReply() {
			err = fmt.Errorf("%w: %v is a reply, not a request", ErrProtocol, m.op)
		}
		if err != nil {
			c.enqueue(*errReply(m.id, codeMalformed, "%v", err))
			return false, err
		}
		o := c.s.apply(c, func(st *store) outcome { return st.handle(c.rank, c.joined, &m) })
		if o.joined {
			c.joined = true
		}
		if o.bye {
			return true, nil
		}
	}
}
