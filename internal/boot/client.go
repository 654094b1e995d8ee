package boot

import (
	"bufio"
	"context"
	"fmt"
	"math"
	"net"
	"sync"
	"time"
)

// closeTimeout bounds how long Close waits for the server to acknowledge
// BYE; Close has no context and must not hang on a dead server.
const closeTimeout = 5 * time.Second

// client is a rank's connection to the launcher's KVS. Requests carry ids,
// so operations from several goroutines share the one connection: a Get
// waiting for a key does not hold up a Put.
type client struct {
	nc   net.Conn
	rank int

	wsem chan struct{} // write lock that a context can give up on
	wbuf []byte        // guarded by wsem
	wdl  writeDeadline

	mu      sync.Mutex
	pending map[uint32]chan message // request id → where its reply goes
	nextID  uint32
	epoch   uint64         // the last fence epoch entered
	err     error          // why the connection is unusable; set once
	byeID   uint32         // the BYE's request id, 0 before Close
	watchID uint32         // the WATCH's request id, 0 before WatchLosses
	onLost  func(rank int) // called with each LOST, from readLoop
	closing bool           // BYE acknowledged or Close done: the end of the stream is expected
	done    chan struct{}

	closeOnce sync.Once
	closeErr  error
}

// dialKV connects to the KVS at addr as rank of a job of size ranks,
// authenticates and says HELLO.
func dialKV(ctx context.Context, addr string, secret []byte, rank, size int) (*client, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	// The handshake is bounded by ctx, and by handshakeTimeout when ctx is
	// not: something that accepts but never answers is not a KVS.
	deadline := time.Now().Add(handshakeTimeout)
	if dl, ok := ctx.Deadline(); ok && dl.Before(deadline) {
		deadline = dl
	}
	nc.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { nc.SetDeadline(time.Unix(1, 0)) })
	err = clientHandshake(nc, secret, uint32(rank))
	if !stop() {
		err = ctx.Err()
	}
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("kvs handshake with %s: %w", addr, err)
	}
	nc.SetDeadline(time.Time{})

	c := &client{
		nc:      nc,
		rank:    rank,
		wsem:    make(chan struct{}, 1),
		pending: make(map[uint32]chan message),
		done:    make(chan struct{}),
	}
	c.wdl.nc = nc
	go c.readLoop()
	if _, err := c.call(ctx, &message{op: opHello, rank: uint32(rank), size: uint32(size)}, opOK); err != nil {
		c.fail(err)
		<-c.done
		return nil, fmt.Errorf("kvs hello as rank %d: %w", rank, err)
	}
	return c, nil
}

// Put implements KV.
func (c *client) Put(ctx context.Context, key, value string) error {
	if err := checkKey(key); err != nil {
		return fmt.Errorf("kvs put: %w", err)
	}
	if len(value) > MaxValue {
		return fmt.Errorf("kvs put %q: value of %d bytes, limit %d: %w", key, len(value), MaxValue, ErrLimit)
	}
	if _, err := c.call(ctx, &message{op: opPut, key: key, value: value}, opOK); err != nil {
		return fmt.Errorf("kvs put %q: %w", key, err)
	}
	return nil
}

// Get implements KV.
func (c *client) Get(ctx context.Context, key string) (string, error) {
	if err := checkKey(key); err != nil {
		return "", fmt.Errorf("kvs get: %w", err)
	}
	r, err := c.call(ctx, &message{op: opGet, key: key}, opValue)
	if err != nil {
		return "", fmt.Errorf("kvs get %q: %w", key, err)
	}
	return r.value, nil
}

// Fence implements KV. A fence given up through ctx still counts on the
// server (the rank has entered it); the next Fence names the next epoch.
func (c *client) Fence(ctx context.Context) error {
	c.mu.Lock()
	c.epoch++
	epoch := c.epoch
	c.mu.Unlock()
	r, err := c.call(ctx, &message{op: opFence, epoch: epoch}, opFenced)
	if err == nil && r.epoch != epoch {
		err = fmt.Errorf("%w: FENCED for epoch %d, want %d", ErrProtocol, r.epoch, epoch)
	}
	if err != nil {
		return fmt.Errorf("kvs fence epoch %d: %w", epoch, err)
	}
	return nil
}

// Abort implements Aborter: it asks the launcher to end the job with code
// and returns once the launcher has the request. message is cut to 1 KiB.
func (c *client) Abort(ctx context.Context, code int, msg string) error {
	code = min(max(code, math.MinInt32), math.MaxInt32)
	_, err := c.call(ctx, &message{op: opAbort, code: int32(code), text: cutText(msg)}, opOK)
	if err != nil {
		return fmt.Errorf("kvs abort: %w", err)
	}
	return nil
}

// Close implements KV: it says BYE, waits (at most closeTimeout) for the
// server to acknowledge it, and closes the connection. Operations still
// waiting fail with ErrClosed.
func (c *client) Close() error {
	c.closeOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
		defer cancel()
		if _, err := c.call(ctx, &message{op: opBye}, opOK); err != nil {
			c.closeErr = fmt.Errorf("kvs bye: %w", err)
		}
		c.mu.Lock()
		c.closing = true
		c.mu.Unlock()
		c.fail(ErrClosed)
		<-c.done
	})
	return c.closeErr
}

func checkKey(key string) error {
	switch {
	case key == "":
		return fmt.Errorf("empty key: %w", ErrRefused)
	case len(key) > MaxKey:
		return fmt.Errorf("key of %d bytes, limit %d: %w", len(key), MaxKey, ErrLimit)
	}
	return nil
}

// call sends request m and waits for its reply, which must be of op want
// (or ERR, returned as an error wrapping the code's sentinel).
func (c *client) call(ctx context.Context, m *message, want op) (message, error) {
	ch, err := c.register(m)
	if err != nil {
		return message{}, err
	}
	if err := c.send(ctx, m); err != nil {
		c.forget(m.id)
		return message{}, err
	}
	return c.await(ctx, m, ch, want)
}

// register gives m its id and a channel for its reply.
func (c *client) register(m *message) (chan message, error) {
	ch := make(chan message, 1)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return nil, c.err
	}
	c.nextID++
	m.id = c.nextID
	c.pending[m.id] = ch
	if m.op == opBye {
		c.byeID = m.id
	}
	return ch, nil
}

// WatchLosses implements LossWatcher: after it returns, lost is called
// with each rank the launcher reports lost — those reported before, then
// the others as they come — from the goroutine that reads the connection,
// one call at a time; it must not wait on this client. Once per client.
func (c *client) WatchLosses(ctx context.Context, lost func(rank int)) error {
	m := &message{op: opWatch}
	c.mu.Lock()
	watching := c.onLost != nil
	if !watching {
		c.onLost = lost
	}
	c.mu.Unlock()
	if watching {
		return fmt.Errorf("kvs watch: already watching: %w", ErrRefused)
	}
	ch, err := c.register(m)
	if err == nil {
		c.mu.Lock()
		c.watchID = m.id // before the OK can arrive: the LOSTs follow it
		c.mu.Unlock()
		if err = c.send(ctx, m); err != nil {
			c.forget(m.id)
		} else {
			_, err = c.await(ctx, m, ch, opOK)
		}
	}
	if err != nil {
		return fmt.Errorf("kvs watch: %w", err)
	}
	return nil
}

// await waits for the reply to m, sent, on ch.
func (c *client) await(ctx context.Context, m *message, ch chan message, want op) (message, error) {
	select {
	case r := <-ch:
		return checkReply(r, want)
	case <-c.done:
		select { // a reply that raced with the end still counts
		case r := <-ch:
			return checkReply(r, want)
		default:
			return message{}, c.err
		}
	case <-ctx.Done():
		c.abandon(m)
		return message{}, ctx.Err()
	}
}

// abandon forgets m's reply and, for a GET, tells the server to stop
// holding it (best effort: the write ends with the connection at the
// latest).
func (c *client) abandon(m *message) {
	c.forget(m.id)
	if m.op == opGet {
		go c.send(context.Background(), &message{op: opCancel, id: m.id})
	}
}

// getBatch bounds the GETs GetMany has in flight at once, well under the
// server's limit on waiting GETs per rank (store.go).
const getBatch = 256

// GetMany returns the values of keys, in order, each waiting for its key
// as Get does. The requests of a batch go out in one write and their
// replies come back as the server has them: a rank learning every rank's
// addresses after a fence pays a round trip per batch, not per key (at
// 256 ranks one per key was 196 000 round trips through the launcher,
// most of a 10 s start).
func (c *client) GetMany(ctx context.Context, keys []string) ([]string, error) {
	for _, k := range keys {
		if err := checkKey(k); err != nil {
			return nil, fmt.Errorf("kvs get: %w", err)
		}
	}
	out := make([]string, 0, len(keys))
	for len(keys) > 0 {
		batch := keys[:min(len(keys), getBatch)]
		keys = keys[len(batch):]
		ms := make([]*message, len(batch))
		chs := make([]chan message, len(batch))
		for i, k := range batch {
			ms[i] = &message{op: opGet, key: k}
			ch, err := c.register(ms[i])
			if err != nil {
				for _, m := range ms[:i] {
					c.forget(m.id)
				}
				return nil, fmt.Errorf("kvs get %q: %w", k, err)
			}
			chs[i] = ch
		}
		if err := c.send(ctx, ms...); err != nil {
			for _, m := range ms {
				c.forget(m.id)
			}
			return nil, fmt.Errorf("kvs get %q: %w", batch[0], err)
		}
		for i, ch := range chs {
			r, err := c.await(ctx, ms[i], ch, opValue)
			if err != nil {
				for _, m := range ms[i+1:] {
					c.abandon(m)
				}
				return nil, fmt.Errorf("kvs get %q: %w", batch[i], err)
			}
			out = append(out, r.value)
		}
	}
	return out, nil
}

func checkReply(r message, want op) (message, error) {
	if r.op == opErr {
		sentinel := codeErrors[uint16(r.code)]
		if sentinel == nil {
			sentinel = ErrProtocol
		}
		return r, fmt.Errorf("%s: %w", r.text, sentinel)
	}
	if r.op != want {
		return r, fmt.Errorf("%w: got %v, want %v", ErrProtocol, r.op, want)
	}
	return r, nil
}

func (c *client) forget(id uint32) {
	c.mu.Lock()
	delete(c.pending, id)
	c.mu.Unlock()
}

// send writes the frames of ms in one write. If ctx ends while the write
// is stuck, the write is abandoned; when part of it had gone out, the
// stream can no longer be trusted and the client fails.
func (c *client) send(ctx context.Context, ms ...*message) error {
	select {
	case c.wsem <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	case <-c.done:
		return c.err
	}
	defer func() { <-c.wsem }()

	c.wbuf = c.wbuf[:0]
	for _, m := range ms {
		c.wbuf = appendFrame(c.wbuf, m)
	}
	c.wdl.begin()
	stop := context.AfterFunc(ctx, c.wdl.expire)
	n, err := c.nc.Write(c.wbuf)
	stop()
	c.wdl.end()
	if cap(c.wbuf) > 64<<10 {
		c.wbuf = nil // do not keep a 1 MiB PUT's buffer for the job's life
	}
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil && n == 0:
		return ctx.Err()
	case ctx.Err() != nil:
		c.fail(fmt.Errorf("%w: a write was abandoned mid-frame", ErrServerLost))
		return ctx.Err()
	}
	c.fail(fmt.Errorf("%w: %v", ErrServerLost, err))
	return c.err
}

// fail makes the client unusable with err (the first error wins) and
// closes the connection, which ends readLoop.
func (c *client) fail(err error) {
	c.mu.Lock()
	if c.err == nil {
		if c.closing {
			err = ErrClosed // the server hangs up after BYE, as it should
		}
		c.err = err
	}
	c.mu.Unlock()
	c.nc.Close()
}

// readLoop hands each reply to its waiting call. When the connection ends,
// done is closed and every waiting call returns c.err.
func (c *client) readLoop() {
	defer close(c.done)
	br := bufio.NewReader(c.nc)
	buf := make([]byte, 4096)
	for {
		f, err := readFrame(br, buf)
		if err != nil {
			c.fail(fmt.Errorf("%w: %v", ErrServerLost, err))
			return
		}
		m, err := decodeMessage(f)
		if err == nil && !m.op.isReply() {
			err = fmt.Errorf("%w: server sent a request (%v)", ErrProtocol, m.op)
		}
		if err != nil {
			c.fail(fmt.Errorf("kvs server sent a bad frame: %w", err))
			return
		}
		if m.op == opErr && m.id == 0 {
			// The server reports a broken frame of ours and hangs up.
			c.fail(fmt.Errorf("kvs server dropped the connection: %s: %w", m.text, ErrProtocol))
			return
		}
		if m.op == opLost {
			c.mu.Lock()
			lost, watchID := c.onLost, c.watchID
			c.mu.Unlock()
			if watchID == 0 || m.id != watchID {
				c.fail(fmt.Errorf("kvs server sent LOST under id %d, not a WATCH's: %w", m.id, ErrProtocol))
				return
			}
			lost(int(m.rank))
			continue
		}
		c.mu.Lock()
		ch := c.pending[m.id]
		delete(c.pending, m.id)
		if m.id == c.byeID && m.id != 0 {
			c.closing = true // the server hangs up next
		}
		c.mu.Unlock()
		if ch != nil {
			ch <- m // buffered: never blocks
		}
	}
}

// writeDeadline lets a context abandon one write without touching the
// next: expire sets a past deadline only while a write is under way, and
// end clears it, whichever order they run in.
type writeDeadline struct {
	mu      sync.Mutex
	nc      net.Conn
	writing bool
}

func (w *writeDeadline) begin() {
	w.mu.Lock()
	w.writing = true
	w.mu.Unlock()
}

func (w *writeDeadline) expire() {
	w.mu.Lock()
	if w.writing {
		w.nc.SetWriteDeadline(time.Unix(1, 0))
	}
	w.mu.Unlock()
}

func (w *writeDeadline) end() {
	w.mu.Lock()
	w.writing = false
	w.nc.SetWriteDeadline(time.Time{})
	w.mu.Unlock()
}

var _ interface {
	KV
	Aborter
	LossWatcher
} = (*client)(nil)
