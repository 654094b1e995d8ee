package boot

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/commtune/commtune/internal/setting"
)

// Variables a PMIx server (Open MPI's mpirun, PRRTE, Slurm's srun
// --mpi=pmix) sets for the processes it starts, and commtune's choice of
// encoding.
const (
	EnvPMIxNamespace = "PMIX_NAMESPACE"
	EnvPMIxRank      = "PMIX_RANK"
	EnvPMIxSecurity  = "PMIX_SECURITY_MODE" // the credentials the server takes, e.g. "munge,native"
	EnvPMIxVersion   = "PMIX_VERSION"       // the server's PMIx version
	// EnvPMIxPsquash is set where a site chose the integer squashing; a
	// varint client cannot know it matches, so the fixed-width v3 URI is
	// preferred then.
	EnvPMIxPsquash = "PMIX_MCA_psquash"
	// EnvPMIxEncoding forces the encoding: v41, v4, v3 or auto (the
	// newest the server offers).
	EnvPMIxEncoding = "COMMTUNE_PMIX"
)

// pmixURIs are the server's addresses by encoding, newest first: the
// variable a client reads decides the encoding it must speak.
var pmixURIs = []string{"PMIX_SERVER_URI41", "PMIX_SERVER_URI4", "PMIX_SERVER_URI3"}

// SourcePMIx is Job.Source for a job started by a PMIx server.
const SourcePMIx = "pmix"

// pmixVersion is the PMIx version this client says it speaks: the oldest
// whose wire it follows in full.
const pmixVersion = "4.2.2"

// PMIx commands (pmix_globals.h).
const (
	pmixCmdReq      = 0
	pmixCmdAbort    = 1
	pmixCmdCommit   = 2
	pmixCmdFence    = 3
	pmixCmdGet      = 4
	pmixCmdFinalize = 5
)

// Scopes of committed data: GLOBAL puts go to both tables.
const (
	pmixScopeLocal  = 1
	pmixScopeRemote = 2
)

// pmixErrTimeout is PMIX_ERR_TIMEOUT.
const pmixErrTimeout = -24

// pmixFirstTag is the first tag a client gives a request: tags below it
// belong to the server (I/O forwarding, events), as in OpenPMIx.
const pmixFirstTag = 101

// pmixClient is a connection to the local PMIx server and the job's
// key-value space over it. Requests carry tags and may be in flight
// together (an Abort while a Fence waits); one goroutine reads every
// reply and hands it to the request with its tag.
type pmixClient struct {
	conn   net.Conn
	enc    pmixEncoding
	bfrops string // the encoding's name: v41, v4, v3
	nspace string
	rank   uint32
	size   int // the job's, once known
	pindex int32

	wmu sync.Mutex // one frame written at a time

	mu      sync.Mutex
	nextTag uint32
	pending map[uint32]chan []byte
	lost    error         // why the connection ended, once it has
	done    chan struct{} // closed when the reader stops
	closed  bool
	closing bool              // a Close is finalizing
	puts    map[string]string // put since the last commit
	kv      map[string]string // every put, for conflict checks
	ops     sync.Mutex        // fences and gets in order, as under PMI
}

// detectPMIx recognises a PMIx server's environment, connects and reads
// the job's shape.
func detectPMIx(ctx context.Context, lookup func(string) (string, bool)) (*Job, bool, error) {
	nspace, hasNS := lookup(EnvPMIxNamespace)
	rankText, hasRank := lookup(EnvPMIxRank)
	if !hasNS && !hasRank {
		return nil, false, nil
	}
	c, err := dialPMIx(ctx, lookup, nspace, rankText)
	if err != nil {
		return nil, true, err
	}
	j, err := c.start(ctx)
	if err != nil {
		c.conn.Close()
		return nil, true, err
	}
	return j, true, nil
}

// pmixEndpoint is the server's address and the encoding its variable
// implies.
type pmixEndpoint struct {
	variable, addr, bfrops string
	enc                    pmixEncoding
}

// pmixServer picks the URI variable: the newest encoding offered, v3 when
// the site set psquash, or the one COMMTUNE_PMIX names.
func pmixServer(lookup func(string) (string, bool)) (pmixEndpoint, error) {
	want, err := pmixSetting(lookup)
	if err != nil {
		return pmixEndpoint{}, err
	}
	order := pmixURIs
	switch want {
	case "auto":
		if _, ok := lookup(EnvPMIxPsquash); ok {
			order = []string{"PMIX_SERVER_URI3", "PMIX_SERVER_URI41", "PMIX_SERVER_URI4"}
		}
	default:
		order = []string{"PMIX_SERVER_URI" + strings.TrimPrefix(want, "v")}
	}
	for _, name := range order {
		uri, ok := lookup(name)
		if !ok {
			continue
		}
		addr, err := parsePMIxURI(name, uri)
		if err != nil {
			return pmixEndpoint{}, err
		}
		enc, bfrops := pmixURIEncoding(name)
		return pmixEndpoint{variable: name, addr: addr, bfrops: bfrops, enc: enc}, nil
	}
	if want != "auto" {
		return pmixEndpoint{}, fmt.Errorf("%w: %s=%s but the server sets no %s", ErrPMIx, EnvPMIxEncoding, want, order[0])
	}
	if _, old := lookup("PMIX_SERVER_URI21"); old {
		return pmixEndpoint{}, fmt.Errorf("%w: the PMIx server offers only the v2 wire (PMIX_SERVER_URI21); commtune speaks v3 and later (OpenPMIx 3.2+)", ErrPMIx)
	}
	return pmixEndpoint{}, fmt.Errorf("%w: %s is set but no PMIX_SERVER_URI41, _URI4 or _URI3", ErrPMIx, EnvPMIxNamespace)
}

// pmixSetting reads COMMTUNE_PMIX: v41, v4, v3, or auto (also when unset
// or blank).
func pmixSetting(lookup func(string) (string, bool)) (string, error) {
	text, _ := lookup(EnvPMIxEncoding)
	switch v := strings.ToLower(strings.TrimSpace(text)); v {
	case "", "auto":
		return "auto", nil
	case "v41", "v4", "v3":
		return v, nil
	}
	return "", fmt.Errorf("%w: %w", ErrPMIx, setting.Bad(setting.Env(EnvPMIxEncoding, text), "v41, v4, v3 or auto"))
}

// parsePMIxURI reads "<nspace>.<rank>;tcp4://HOST:PORT" (or tcp6://[ADDR]:PORT).
func parsePMIxURI(name, uri string) (string, error) {
	bad := func(why string) (string, error) {
		return "", fmt.Errorf("%w: %s=%q: %s", ErrPMIx, name, clip(uri), why)
	}
	_, rest, ok := strings.Cut(uri, ";")
	if !ok {
		return bad("want <nspace>.<rank>;tcp4://HOST:PORT")
	}
	scheme, hostport, ok := strings.Cut(rest, "://")
	if !ok || scheme != "tcp4" && scheme != "tcp6" && scheme != "tcp" {
		return bad("not a tcp address (a usock server is not supported)")
	}
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		return bad(err.Error())
	}
	if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
		return bad("bad port")
	}
	return net.JoinHostPort(host, port), nil
}

// pmixEnv checks what a PMIx server set: the namespace, the rank, a
// security mode commtune can meet, and the server to dial.
func pmixEnv(lookup func(string) (string, bool), nspace, rankText string) (uint32, pmixEndpoint, error) {
	if nspace == "" || len(nspace) > 255 || strings.IndexByte(nspace, 0) >= 0 {
		return 0, pmixEndpoint{}, fmt.Errorf("%w: %s=%q is not a namespace", ErrPMIx, EnvPMIxNamespace, clip(nspace))
	}
	rank, err := strconv.ParseUint(strings.TrimSpace(rankText), 10, 32)
	if err != nil || rank >= MaxSize {
		return 0, pmixEndpoint{}, fmt.Errorf("%w: %s=%q is not a rank", ErrPMIx, EnvPMIxRank, clip(rankText))
	}
	if sec, ok := lookup(EnvPMIxSecurity); ok && !securityOffers(sec, "native") {
		return 0, pmixEndpoint{}, fmt.Errorf("%w: %s=%s: the server takes no native credential, the only kind commtune sends", ErrPMIx, EnvPMIxSecurity, sec)
	}
	ep, err := pmixServer(lookup)
	return uint32(rank), ep, err
}

// dialPMIx connects and runs the handshake.
func dialPMIx(ctx context.Context, lookup func(string) (string, bool), nspace, rankText string) (*pmixClient, error) {
	rank, ep, err := pmixEnv(lookup, nspace, rankText)
	if err != nil {
		return nil, err
	}
	d := net.Dialer{Timeout: pmiReplyTimeout}
	conn, err := d.DialContext(ctx, "tcp", ep.addr)
	if err != nil {
		return nil, fmt.Errorf("%w: connecting to %s=%s: %v", ErrPMIx, ep.variable, ep.addr, err)
	}
	c := &pmixClient{conn: conn, enc: ep.enc, bfrops: ep.bfrops, nspace: nspace, rank: rank, nextTag: pmixFirstTag,
		pending: map[uint32]chan []byte{}, done: make(chan struct{}), puts: map[string]string{}, kv: map[string]string{}}
	if err := c.hello(ctx); err != nil {
		conn.Close()
		return nil, err
	}
	go c.readLoop()
	return c, nil
}

func securityOffers(list, mode string) bool {
	for _, m := range strings.Split(list, ",") {
		if strings.TrimSpace(m) == mode {
			return true
		}
	}
	return false
}

// hello sends the connection request and reads the peer index.
func (c *pmixClient) hello(ctx context.Context) error {
	stop := connDeadline(ctx, c.conn, pmiReplyTimeout)
	defer stop()
	msg := appendHello(nil, pmixHello{nspace: c.nspace, rank: c.rank, version: pmixVersion, bfrops: c.bfrops, uid: pmixUID(), gid: pmixGID()})
	if _, err := c.conn.Write(msg); err != nil {
		return fmt.Errorf("%w: sending the connection request: %v", ErrPMIx, err)
	}
	var reply [8]byte
	if _, err := io.ReadFull(c.conn, reply[:4]); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			// OpenPMIx 4 closes without a word on any refusal.
			return fmt.Errorf("%w: the server closed the connection during the handshake: it refused namespace %q rank %d, the %s encoding or this user's credential", ErrPMIx, c.nspace, c.rank, c.bfrops)
		}
		return fmt.Errorf("%w: reading the connection reply: %v", ErrPMIx, err)
	}
	if st := int32(binary.BigEndian.Uint32(reply[:4])); st != 0 {
		// OpenPMIx 3 says why in 4 bytes, then closes.
		return fmt.Errorf("%w: the server refused the connection: %s", ErrPMIx, pmixStatusText(st))
	}
	if _, err := io.ReadFull(c.conn, reply[4:]); err != nil {
		return fmt.Errorf("%w: reading the connection reply: %v", ErrPMIx, err)
	}
	var err error
	c.pindex, err = parseHelloReply(reply[:])
	return err
}

// connDeadline bounds the next I/O on conn by timeout and by ctx, and
// returns the function that lifts it.
func connDeadline(ctx context.Context, conn net.Conn, timeout time.Duration) func() {
	d := time.Now().Add(timeout)
	if cd, ok := ctx.Deadline(); ok && cd.Before(d) {
		d = cd
	}
	conn.SetDeadline(d)
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Now()) })
	return func() { stop(); conn.SetDeadline(time.Time{}) }
}

// readLoop hands each reply to the request with its tag; tag 0 (events
// the server sends unasked) and replies nobody waits for any more are
// dropped. When the connection ends, every waiting request learns why.
func (c *pmixClient) readLoop() {
	var hdr [pmixHeaderLen]byte
	var err error
	for {
		if _, err = io.ReadFull(c.conn, hdr[:]); err != nil {
			break
		}
		var h pmixHeader
		if h, err = parseHeader(hdr[:]); err != nil {
			break
		}
		body := make([]byte, h.nbytes)
		if _, err = io.ReadFull(c.conn, body); err != nil {
			break
		}
		c.mu.Lock()
		ch := c.pending[h.tag]
		delete(c.pending, h.tag)
		c.mu.Unlock()
		if ch != nil {
			ch <- body
		}
	}
	c.mu.Lock()
	if c.closed {
		c.lost = ErrClosed
	} else if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		c.lost = fmt.Errorf("%w: the server closed the connection", ErrPMIx)
	} else {
		c.lost = fmt.Errorf("%w: reading from the server: %w", ErrPMIx, err)
	}
	close(c.done)
	c.mu.Unlock()
}

// request sends payload under a fresh tag and waits for its reply.
func (c *pmixClient) request(ctx context.Context, timeout time.Duration, what string, payload []byte) ([]byte, error) {
	call, err := c.send(what, payload)
	if err != nil {
		return nil, err
	}
	return c.wait(ctx, timeout, call)
}

// pmixCall is a request sent and not yet answered.
type pmixCall struct {
	tag   uint32
	what  string
	reply chan []byte
}

// send writes payload under a fresh tag, registered for its reply.
func (c *pmixClient) send(what string, payload []byte) (*pmixCall, error) {
	call := &pmixCall{what: what, reply: make(chan []byte, 1)}
	c.mu.Lock()
	if c.lost != nil {
		err := c.lost
		c.mu.Unlock()
		return nil, err
	}
	call.tag = c.nextTag
	c.nextTag++
	if c.nextTag == math.MaxUint32 {
		c.nextTag = pmixFirstTag
	}
	c.pending[call.tag] = call.reply
	c.mu.Unlock()
	frame := appendHeader(make([]byte, 0, pmixHeaderLen+len(payload)), pmixHeader{pindex: c.pindex, tag: call.tag, nbytes: uint32(len(payload))})
	frame = append(frame, payload...)
	c.wmu.Lock()
	c.conn.SetWriteDeadline(time.Now().Add(pmiReplyTimeout))
	_, err := c.conn.Write(frame)
	c.wmu.Unlock()
	if err != nil {
		c.forget(call)
		// Part of the frame may be out: the stream is out of step, so the
		// connection ends here and every later call says why.
		c.conn.Close()
		return nil, fmt.Errorf("%w: sending %s: %v", ErrPMIx, what, err)
	}
	return call, nil
}

// forget stops waiting for call's reply: one that comes later is dropped.
func (c *pmixClient) forget(call *pmixCall) {
	c.mu.Lock()
	delete(c.pending, call.tag)
	c.mu.Unlock()
}

// wait returns call's reply, or why none will come: the connection
// ended, ctx ended, or timeout passed.
func (c *pmixClient) wait(ctx context.Context, timeout time.Duration, call *pmixCall) ([]byte, error) {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case body := <-call.reply:
		return body, nil
	case <-c.done:
		select {
		case body := <-call.reply: // came just before the end
			return body, nil
		default:
		}
		c.forget(call)
		c.mu.Lock()
		defer c.mu.Unlock()
		return nil, fmt.Errorf("waiting for the reply to %s: %w", call.what, c.lost)
	case <-ctx.Done():
		c.forget(call)
		return nil, fmt.Errorf("%w: waiting for the reply to %s: %w", ErrPMIx, call.what, ctx.Err())
	case <-timer.C:
		c.forget(call)
		return nil, fmt.Errorf("%w: %w to %s within %v", ErrPMIx, errPMIxNoReply, call.what, timeout)
	}
}

// command starts a payload with its command.
func (c *pmixClient) command(cmd byte) *pmixWriter {
	w := &pmixWriter{enc: c.enc}
	w.count(1)
	w.b = append(w.b, cmd)
	return w
}

// statusCall sends w and checks the status its reply holds.
func (c *pmixClient) statusCall(ctx context.Context, timeout time.Duration, what string, w *pmixWriter) error {
	body, err := c.request(ctx, timeout, what, w.b)
	if err != nil {
		return err
	}
	r := &pmixReader{b: body, enc: c.enc}
	st := r.status(what + "'s status")
	if r.err != nil {
		return r.err
	}
	if st != 0 {
		return fmt.Errorf("%w: %s failed: %s", ErrPMIx, what, pmixStatusText(st))
	}
	return nil
}

// getRequest is the GETNB of one key of one rank.
func (c *pmixClient) getRequest(rank uint32, key string) []byte {
	w := c.command(pmixCmdGet)
	w.count(1)
	w.str(c.nspace)
	w.count(1)
	w.u32(rank)
	w.count(1)
	w.size(0) // no info
	w.count(1)
	w.str(key)
	return w.b
}

// get asks for one key of one rank (GETNB) and returns its value, by
// deadline.
func (c *pmixClient) get(ctx context.Context, deadline time.Time, rank uint32, key string) (any, error) {
	payload := c.getRequest(rank, key)
	what := fmt.Sprintf("the get of %q", key)
	for {
		body, err := c.request(ctx, time.Until(deadline), what, payload)
		if err != nil {
			return nil, err
		}
		v, err := parseGetReply(body, c.enc, key)
		if !errors.Is(err, errPMIxTimeout) {
			return v, err
		}
		// A server answers "timeout" after 2 s when a rank of its node has
		// not committed the key yet; the KV's get waits for it, asking
		// again after a pause in case a server answers at once.
		pause := time.NewTimer(min(pmixRetryPause, time.Until(deadline)))
		select {
		case <-ctx.Done():
			pause.Stop()
			return nil, fmt.Errorf("%w: waiting for %s: %w", ErrPMIx, what, ctx.Err())
		case <-pause.C:
		}
		if !time.Now().Before(deadline) {
			return nil, fmt.Errorf("%w: no value for %s within %v", ErrPMIx, what, pmiFenceTimeout)
		}
	}
}

// pmixRetryPause is the pause before asking again for a key the server
// was not ready to answer.
const pmixRetryPause = 100 * time.Millisecond

// errPMIxNoReply marks a request whose reply did not come in time.
var errPMIxNoReply = errors.New("no reply")

// errPMIxTimeout marks a get the server gave up waiting for.
var errPMIxTimeout = errors.New("the server's wait for the key timed out")

// parseGetReply reads a GETNB reply: the status, then a byte object that
// holds, per rank, the rank (a proc) and its key-values.
func parseGetReply(body []byte, enc pmixEncoding, key string) (any, error) {
	r := &pmixReader{b: body, enc: enc}
	st := r.status("the get's status")
	if r.err != nil {
		return nil, r.err
	}
	if st == pmixErrTimeout {
		return nil, fmt.Errorf("%w: key %q: %w", ErrPMIx, key, errPMIxTimeout)
	}
	if st != 0 {
		return nil, fmt.Errorf("%w: key %q: %s", ErrPMIx, key, pmixStatusText(st))
	}
	if r.left() == 0 {
		return nil, fmt.Errorf("%w: key %q: the reply holds no data", ErrPMIx, key)
	}
	r.one("the get's data")
	data := &pmixReader{b: r.bytes("the get's data"), enc: enc}
	if r.err != nil {
		return nil, r.err
	}
	for data.err == nil && data.left() > 0 {
		data.one("a rank")
		data.typed(pmixProc, "a rank", 0)
		for data.err == nil && data.left() > 0 {
			n := data.count("key-values")
			for i := 0; i < n && data.err == nil; i++ {
				kv := data.kval("a key-value")
				if data.err == nil && kv.key == key {
					return kv.value, nil
				}
			}
		}
	}
	if data.err != nil {
		return nil, data.err
	}
	return nil, fmt.Errorf("%w: the reply to the get of %q does not hold it", ErrPMIx, key)
}

// KV over PMIx. PMIx keys belong to the rank that put them and a get names
// that rank; commtune's keys say it: a key ending in "/N" is rank N's, any
// other key is rank 0's.

// keyOwner returns the rank a key belongs to.
func keyOwner(key string) int {
	i := strings.LastIndexByte(key, '/')
	if i < 0 {
		return 0
	}
	n, err := strconv.Atoi(key[i+1:])
	if err != nil || n < 0 {
		return 0
	}
	return n
}

func (c *pmixClient) usable(key string) error {
	if c.closed {
		return ErrClosed
	}
	if key == "" || len(key) > 511 || strings.IndexByte(key, 0) >= 0 || strings.HasPrefix(key, "pmix") {
		return fmt.Errorf("%w: key %q must be 1 to 511 bytes, without NUL, not starting with \"pmix\"", ErrRefused, clip(key))
	}
	return nil
}

// Put stores value under key; the server learns it at the next Fence.
func (c *pmixClient) Put(_ context.Context, key, value string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.usable(key); err != nil {
		return err
	}
	if owner := keyOwner(key); owner != int(c.rank) {
		return fmt.Errorf("%w: rank %d cannot put %q, which is rank %d's", ErrRefused, c.rank, key, owner)
	}
	if old, ok := c.kv[key]; ok {
		if old != value {
			return fmt.Errorf("%w: %q", ErrConflict, key)
		}
		return nil
	}
	c.kv[key] = value
	c.puts[key] = value
	return nil
}

// Fence commits the puts since the last one, then waits for every rank
// (FENCENB over the whole namespace, data collected).
func (c *pmixClient) Fence(ctx context.Context) error {
	c.ops.Lock()
	defer c.ops.Unlock()
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return ErrClosed
	}
	puts := c.puts
	c.puts = map[string]string{}
	c.mu.Unlock()
	if len(puts) > 0 {
		if err := c.commit(ctx, puts); err != nil {
			c.mu.Lock()
			for k, v := range puts { // a later fence commits them
				c.puts[k] = v
			}
			c.mu.Unlock()
			return err
		}
	}
	w := c.command(pmixCmdFence)
	w.count(1)
	w.size(1)
	w.count(1)
	w.proc(c.nspace, pmixRankWildcard)
	w.count(1)
	w.size(1)
	w.count(1)
	w.infoBool("pmix.collect", true)
	return c.statusCall(ctx, pmiFenceTimeout, "the fence", w)
}

// commit sends puts, in both the local and the remote table as the
// OpenPMIx client does for global puts.
func (c *pmixClient) commit(ctx context.Context, puts map[string]string) error {
	kvs := &pmixWriter{enc: c.enc}
	keys := make([]string, 0, len(puts))
	for k := range puts {
		keys = append(keys, k)
	}
	sort.Strings(keys) // the same puts make the same bytes
	for _, k := range keys {
		kvs.count(1)
		kvs.kval(k, puts[k])
	}
	w := c.command(pmixCmdCommit)
	for _, scope := range []byte{pmixScopeLocal, pmixScopeRemote} {
		w.count(1)
		w.b = append(w.b, scope)
		w.count(1)
		w.b = append(w.b, 1) // buffer type: not self-describing
		w.bytes(kvs.b)
	}
	return c.statusCall(ctx, pmiReplyTimeout, "the commit", w)
}

// Get returns key's value from the rank that owns it (see keyOwner),
// waiting, as the server does, until that rank has committed it.
func (c *pmixClient) Get(ctx context.Context, key string) (string, error) {
	v, err := c.GetMany(ctx, []string{key})
	if err != nil {
		return "", err
	}
	return v[0], nil
}

// GetMany implements ManyGetter: every get goes out at once and the
// replies are taken as they come, one round trip for all. A key the
// server was not ready to answer is asked again on its own.
func (c *pmixClient) GetMany(ctx context.Context, keys []string) ([]string, error) {
	deadline := time.Now().Add(pmiFenceTimeout)
	out := make([]string, len(keys))
	calls := make([]*pmixCall, len(keys))
	defer func() {
		for _, call := range calls {
			if call != nil {
				c.forget(call)
			}
		}
	}()
	c.ops.Lock()
	defer c.ops.Unlock()
	for i, key := range keys {
		c.mu.Lock()
		err := c.usable(key)
		own, mine := c.kv[key]
		c.mu.Unlock()
		if err != nil {
			return nil, err
		}
		if owner := keyOwner(key); c.size > 0 && owner >= c.size {
			// The server would ask its host for a rank that does not exist.
			return nil, fmt.Errorf("%w: key %q names rank %d, past the job's %d", ErrRefused, key, owner, c.size)
		}
		if mine {
			// This rank's own data, answered here as the OpenPMIx client
			// does: no round trip.
			out[i] = own
			continue
		}
		if calls[i], err = c.send(fmt.Sprintf("the get of %q", key), c.getRequest(uint32(keyOwner(key)), key)); err != nil {
			return nil, err
		}
	}
	for i, call := range calls {
		if call == nil {
			continue
		}
		body, err := c.wait(ctx, time.Until(deadline), call)
		calls[i] = nil
		if err != nil {
			return nil, err
		}
		v, err := parseGetReply(body, c.enc, keys[i])
		if errors.Is(err, errPMIxTimeout) {
			v, err = c.get(ctx, deadline, uint32(keyOwner(keys[i])), keys[i])
		}
		if err != nil {
			return nil, err
		}
		if out[i], err = valueString(keys[i], v); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// valueString is a value commtune put: a string, or a byte object.
func valueString(key string, v any) (string, error) {
	switch v := v.(type) {
	case string:
		return v, nil
	case []byte:
		return string(v), nil
	}
	return "", fmt.Errorf("%w: key %q holds %T, not a value commtune put", ErrPMIx, key, v)
}

// Abort implements Aborter: the server ends every process of the job and
// the launcher exits with code. Once the request is out it waits at most
// pmixAbortWait for the answer: Open MPI's mpirun often answers only by
// killing the job, at times seconds later, and the caller's next step,
// telling the peers, ends the job at once with the same code.
func (c *pmixClient) Abort(ctx context.Context, code int, msg string) error {
	w := c.command(pmixCmdAbort)
	w.count(1)
	w.i32(int32(code))
	w.count(1)
	w.str(strings.NewReplacer("\x00", " ").Replace(cutText(msg)))
	w.count(1)
	w.size(0) // no procs: the whole job
	call, err := c.send("the abort", w.b)
	if err != nil {
		return err
	}
	body, err := c.wait(ctx, pmixAbortWait, call)
	if err != nil {
		if errors.Is(err, errPMIxNoReply) {
			return nil // sent; the server acts on it or the ranks' exits end the job
		}
		return err
	}
	r := &pmixReader{b: body, enc: c.enc}
	if st := r.status("the abort's status"); r.err != nil {
		return r.err
	} else if st != 0 {
		return fmt.Errorf("%w: the abort failed: %s", ErrPMIx, pmixStatusText(st))
	}
	// The server took it and is ending the job: let it, until ctx ends.
	// Open MPI's mpirun stops its ranks in steps, each ended early by a
	// rank's exit; ranks that all exit before it starts leave it waiting
	// out every step (2 s).
	<-ctx.Done()
	return nil
}

// pmixAbortWait bounds the wait for the answer to an abort.
const pmixAbortWait = 300 * time.Millisecond

// Close finalizes, so the launcher knows this rank ended on purpose (an
// Open MPI mpirun fails the job otherwise), then closes the connection.
func (c *pmixClient) Close() error {
	c.mu.Lock()
	if c.closed || c.closing {
		c.mu.Unlock()
		<-c.done // the first Close ends the connection
		return nil
	}
	c.closing = true
	c.mu.Unlock()
	err := c.statusCall(context.Background(), pmiReplyTimeout, "finalize", c.command(pmixCmdFinalize))
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	if cerr := c.conn.Close(); err == nil {
		err = cerr
	}
	<-c.done
	return err
}

// pmixURIEncoding reports the encoding a PMIX_SERVER_URI variable implies.
func pmixURIEncoding(name string) (pmixEncoding, string) {
	switch name {
	case "PMIX_SERVER_URI41":
		return pmixV4, "v41"
	case "PMIX_SERVER_URI4":
		return pmixV4, "v4"
	case "PMIX_SERVER_URI3":
		return pmixV3, "v3"
	}
	return 0, ""
}

// uid and gid for the credential; variables so that tests can build the
// exact bytes of a capture.
var (
	pmixUID = func() uint32 { return uint32(os.Geteuid()) }
	pmixGID = func() uint32 { return uint32(os.Getegid()) }
)
