package boot

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"
)

// handshakeTimeout bounds how long an unauthenticated connection may take
// to prove itself; a stuck or hostile peer is dropped after it.
const handshakeTimeout = 10 * time.Second

// Server is the launcher's key-value service (KVS): the ranks of one job
// connect to it, authenticate with the job secret, and put, get and fence.
// It reports ranks that abort or vanish on Events.
type Server struct {
	ln     net.Listener
	secret []byte
	log    *slog.Logger
	events chan Event

	mu           sync.Mutex
	st           *store
	ranks        map[int]*conn      // joined connections
	conns        map[*conn]struct{} // every open connection
	closing      bool               // Close was called: report nothing more
	eventsClosed bool

	wg sync.WaitGroup
}

// NewServer starts a KVS for a job of size ranks on 127.0.0.1 (an ephemeral
// port: see Addr). logger receives rejected connections and protocol
// errors; nil discards them.
func NewServer(size int, secret []byte, logger *slog.Logger) (*Server, error) {
	if size < 1 || size > MaxSize {
		return nil, fmt.Errorf("kvs: job size %d out of range [1, %d]", size, MaxSize)
	}
	if len(secret) < 16 {
		return nil, fmt.Errorf("kvs: job secret of %d bytes, want at least 16", len(secret))
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("kvs: %w", err)
	}
	return newServer(ln, size, secret, logger, defaultLimits), nil
}

func newServer(ln net.Listener, size int, secret []byte, logger *slog.Logger, lim limits) *Server {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{
		ln:     ln,
		secret: secret,
		log:    logger,
		// Each rank yields at most one abort and one lost event, so this
		// buffer never fills and the server never waits on the launcher.
		events: make(chan Event, 2*size),
		st:     newStore(size, lim),
		ranks:  make(map[int]*conn),
		conns:  make(map[*conn]struct{}),
	}
	s.wg.Add(1)
	go s.accept()
	return s
}

// Addr returns the host:port ranks connect to (COMMTUNE_BOOT).
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Events reports ranks that abort the job or lose their connection without
// BYE. It is closed once the server has stopped (Close or Shutdown).
func (s *Server) Events() <-chan Event { return s.events }

// Close stops the server at once: it closes every connection (pending
// operations of the ranks fail with ErrServerLost) and reports nothing
// more on Events.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closing = true
	for c := range s.conns {
		c.close()
	}
	s.mu.Unlock()
	return s.stop()
}

// Shutdown stops accepting connections and waits until every open one has
// ended by itself — as they do once the ranks have exited — reporting lost
// ranks on Events as usual; when ctx ends first it closes the rest like
// Close. The launcher calls it after reaping the ranks so that no rank's
// departure goes unreported.
func (s *Server) Shutdown(ctx context.Context) error {
	s.ln.Close()
	stop := context.AfterFunc(ctx, func() { s.Close() })
	err := s.stop()
	if !stop() && err == nil {
		err = fmt.Errorf("kvs: connections still open, closed: %w", ctx.Err())
	}
	return err
}

// stop closes the listener, waits for every goroutine and closes events.
func (s *Server) stop() error {
	err := s.ln.Close()
	s.wg.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	// Every goroutine that could emit has returned: closing is safe.
	if !s.eventsClosed {
		close(s.events)
		s.eventsClosed = true
	}
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	return err
}

func (s *Server) accept() {
	defer s.wg.Done()
	for {
		nc, err := s.ln.Accept()
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				s.log.Error("kvs: accept failed; no more ranks can connect", "err", err)
			}
			return
		}
		c := newConn(s, nc)
		s.mu.Lock()
		if s.closing {
			s.mu.Unlock()
			nc.Close()
			continue
		}
		s.conns[c] = struct{}{}
		s.wg.Add(2)
		s.mu.Unlock()
		go c.serve()
		go c.writeLoop()
	}
}

// emit hands an event to the launcher. Called with s.mu held, so events
// leave in the order the store produced them — before the replies that
// were caused by the same change, which the launcher relies on to blame
// the right rank.
func (s *Server) emit(ev *Event) {
	if ev == nil || s.closing {
		return
	}
	select {
	case s.events <- *ev:
	default:
		s.log.Error("kvs: event dropped", "kind", ev.Kind, "rank", ev.Rank) // cannot happen: see newServer
	}
}

// ReportLost tells every other rank still connected that watches for
// losses (WATCH, sent by ranks of a keep-going job) that rank is lost: the
// launcher calls it when rank ends without saying goodbye and the job goes
// on (docs/kvs.md). A rank is reported once; later calls do nothing.
func (s *Server) ReportLost(rank int) {
	s.apply(nil, func(st *store) outcome { return st.reportLost(rank) })
}

// Left reports whether rank said BYE. A rank's Close waits for the BYE's
// answer, so once its process has exited this is final: the launcher asks
// it to tell an error exit after goodbye from a loss.
func (s *Server) Left(rank int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.st.left(rank)
}

// apply runs fn on the store and routes what it produced; c is the
// connection whose request it was, nil for the launcher's own calls.
func (s *Server) apply(c *conn, fn func(*store) outcome) outcome {
	s.mu.Lock()
	defer s.mu.Unlock()
	o := fn(s.st)
	s.emit(o.event)
	if o.joined {
		s.ranks[c.rank] = c
	}
	if o.reply != nil {
		c.enqueue(*o.reply)
	}
	for _, d := range o.out {
		if rc := s.ranks[d.rank]; rc != nil {
			rc.enqueue(d.msg)
		}
	}
	return o
}
