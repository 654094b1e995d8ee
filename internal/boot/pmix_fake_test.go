package boot

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"net"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// fakePMIx is an in-process PMIx server for tests: the server side of the
// wire as OpenPMIx 4.2.2 lays it out, in the encoding each client
// announces, on a loopback listener (a client dials the address of a
// PMIX_SERVER_URI). It serves a job of size ranks placed on nodes: the
// connection request, the job data (REQ), COMMIT, FENCENB (a barrier over
// every rank), GETNB, ABORT and FINALIZE, and keeps what it received for
// the test to check. A client that breaks the protocol fails the test.
type fakePMIx struct {
	t      *testing.T
	nspace string
	size   int
	nodes  [][]int // the ranks of each node

	// Behaviour, set before the ranks connect.
	unknownFirst bool  // the job data starts with a value of a type no client decodes (PMIX_TOPO)
	events       bool  // send an event (tag 0) before every reply
	refuse       int32 // answer the connection request with this status (as OpenPMIx 3 does), then close
	closeAtFence int   // close a rank's connection when its n-th fence arrives (0: never)

	ln   net.Listener
	wg   sync.WaitGroup
	stop chan struct{} // closed when the test ends

	mu           sync.Mutex
	cond         *sync.Cond
	stopped      bool
	conns        map[net.Conn]bool
	hellos       map[uint32]pmixHello
	committed    map[uint32]map[string]any // per rank: key → string or []byte
	fences       map[uint32]int            // fences per rank
	arrived      map[int]int               // ranks at the n-th fence
	gets         map[string]int            // GETNB per key
	getTimeouts  int                       // answer this many GETNB with PMIX_ERR_TIMEOUT first
	fenceArrived chan uint32               // when set, told the rank of each fence that arrives
	aborts       []fakeAbort
	finalized    map[uint32]bool
	finalizes    map[uint32]int // FINALIZEs per rank
}

// fakeAbort is an ABORT as the server received it.
type fakeAbort struct {
	rank uint32
	code int32
	msg  string
}

// fakeRank is a value of type PMIX_PROC_RANK.
type fakeRank uint32

// newFakePMIx starts a server for a job of size ranks; nodes lists the
// ranks of each node (one node holding them all when none is given). The
// test's end stops it.
func newFakePMIx(t *testing.T, size int, nodes ...[]int) *fakePMIx {
	if len(nodes) == 0 {
		all := make([]int, size)
		for r := range all {
			all[r] = r
		}
		nodes = [][]int{all}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakePMIx{t: t, nspace: "fake-job.0", size: size, nodes: nodes, ln: ln, stop: make(chan struct{}),
		conns: map[net.Conn]bool{}, hellos: map[uint32]pmixHello{}, committed: map[uint32]map[string]any{},
		fences: map[uint32]int{}, arrived: map[int]int{}, gets: map[string]int{}, finalized: map[uint32]bool{}, finalizes: map[uint32]int{}}
	f.cond = sync.NewCond(&f.mu)
	f.wg.Add(1)
	go f.accept()
	t.Cleanup(f.close)
	return f
}

// close stops the server: the listener, every connection and every fence
// waiting; it returns once every goroutine of the server has.
func (f *fakePMIx) close() {
	f.ln.Close()
	f.mu.Lock()
	f.stopped = true
	for c := range f.conns {
		c.Close()
	}
	f.cond.Broadcast()
	f.mu.Unlock()
	close(f.stop)
	f.wg.Wait()
}

// env returns the variables OpenPMIx 4's server sets for rank, changed by
// with: "NAME=value" sets, "-NAME" removes.
func (f *fakePMIx) env(rank int, with ...string) map[string]string {
	uri := f.nspace + ".0;tcp4://" + f.ln.Addr().String()
	env := map[string]string{
		EnvPMIxNamespace: f.nspace, EnvPMIxRank: strconv.Itoa(rank), EnvPMIxVersion: "4.2.2",
		EnvPMIxSecurity: "native", "PMIX_SERVER_URI41": uri, "PMIX_SERVER_URI4": uri, "PMIX_SERVER_URI3": uri,
		"PMIX_SERVER_URI2": uri, "PMIX_SERVER_URI21": uri, "PMIX_BFROP_BUFFER_TYPE": "PMIX_BFROP_BUFFER_NON_DESC",
	}
	editEnv(env, with...)
	return env
}

// accept serves every connection until the test ends.
func (f *fakePMIx) accept() {
	defer f.wg.Done()
	for {
		conn, err := f.ln.Accept()
		if err != nil {
			return
		}
		f.mu.Lock()
		if f.stopped {
			f.mu.Unlock()
			conn.Close()
			return
		}
		f.conns[conn] = true
		f.wg.Add(1)
		f.mu.Unlock()
		go f.serve(conn)
	}
}

// fakePMIxConn is one client's connection.
type fakePMIxConn struct {
	conn   net.Conn
	enc    pmixEncoding
	rank   uint32
	pindex int32
	wmu    sync.Mutex
}

// send writes one frame on tag, after an event when the server sends
// them.
func (f *fakePMIx) send(c *fakePMIxConn, tag uint32, payload []byte) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	var out []byte
	if f.events {
		ev := &pmixWriter{enc: c.enc}
		ev.count(1)
		ev.b = append(ev.b, 12) // PMIX_NOTIFY
		ev.count(1)
		ev.i32(-147) // an event code
		ev.count(1)
		ev.proc("fake-server", 0)
		ev.count(1)
		ev.size(0) // no info
		ev.count(1)
		ev.b = append(ev.b, 2) // PMIX_RANGE_SESSION
		out = appendHeader(out, pmixHeader{tag: 0, nbytes: uint32(len(ev.b))})
		out = append(out, ev.b...)
	}
	out = appendHeader(out, pmixHeader{tag: tag, nbytes: uint32(len(payload))})
	c.conn.Write(append(out, payload...)) // a client gone is the test's business
}

// serve runs one client's handshake, then answers each of its requests
// in a goroutine of its own (a fence may wait while an abort is answered).
func (f *fakePMIx) serve(conn net.Conn) {
	defer f.wg.Done()
	defer conn.Close()
	c, ok := f.handshake(conn)
	if !ok {
		return
	}
	for {
		fr, err := readPMIxFrame(conn)
		if err != nil {
			return // the client closed, or the test did
		}
		if fr.h.pindex != c.pindex || fr.h.tag < pmixFirstTag || fr.pad != 0 {
			f.t.Errorf("fake pmix: rank %d sent header %+v pad %d, want peer index %d and a tag from %d", c.rank, fr.h, fr.pad, c.pindex, pmixFirstTag)
			return
		}
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			f.handle(c, fr.h.tag, fr.payload)
		}()
	}
}

// helloCursor reads the connection request's fields.
type helloCursor struct {
	b   []byte
	bad bool
}

func (p *helloCursor) take(n int) []byte {
	if p.bad || len(p.b) < n {
		p.bad = true
		return make([]byte, n)
	}
	out := p.b[:n]
	p.b = p.b[n:]
	return out
}

func (p *helloCursor) cstr() string {
	i := strings.IndexByte(string(p.b), 0)
	if p.bad || i < 0 {
		p.bad = true
		return ""
	}
	return string(p.take(i + 1)[:i])
}

// handshake reads the connection request of a simple client in the native
// mode and answers it as OpenPMIx does: status and peer index, or (an
// unknown namespace) a close without a word.
func (f *fakePMIx) handshake(conn net.Conn) (*fakePMIxConn, bool) {
	var hdr [pmixHeaderLen]byte
	if _, err := io.ReadFull(conn, hdr[:]); err != nil {
		return nil, false
	}
	n := binary.NativeEndian.Uint32(hdr[8:]) // host order, as OpenPMIx copies it
	if binary.BigEndian.Uint64(hdr[:8]) != math.MaxUint64 || n > 131072 || binary.BigEndian.Uint32(hdr[12:]) != 0 {
		f.t.Errorf("fake pmix: connection request header %x", hdr)
		return nil, false
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(conn, body); err != nil {
		f.t.Errorf("fake pmix: reading the connection request: %v", err)
		return nil, false
	}
	p := &helloCursor{b: body}
	psec := p.cstr()
	credLen := binary.BigEndian.Uint32(p.take(4))
	cred := p.take(8)
	flag := p.take(1)[0]
	h := pmixHello{nspace: p.cstr()}
	h.rank = binary.BigEndian.Uint32(p.take(4))
	h.version, h.bfrops = p.cstr(), p.cstr()
	bufType := p.take(1)[0]
	gds := p.cstr()
	h.uid, h.gid = binary.NativeEndian.Uint32(cred), binary.NativeEndian.Uint32(cred[4:])
	if p.bad || psec != "native" || credLen != 8 || flag != 0 || bufType != 1 || gds != "hash" || len(p.b) > 1 ||
		h.uid != pmixUID() || h.gid != pmixGID() {
		f.t.Errorf("fake pmix: connection request %q: %+v", body, h)
		return nil, false
	}
	enc := map[string]pmixEncoding{"v41": pmixV4, "v4": pmixV4, "v3": pmixV3}[h.bfrops]
	f.mu.Lock()
	f.hellos[h.rank] = h
	f.mu.Unlock()
	if f.refuse != 0 {
		conn.Write(binary.BigEndian.AppendUint32(nil, uint32(f.refuse)))
		return nil, false
	}
	if h.nspace != f.nspace || enc == 0 {
		return nil, false // OpenPMIx 4 hangs up without a word
	}
	c := &fakePMIxConn{conn: conn, enc: enc, rank: h.rank, pindex: 100 + int32(h.rank)}
	// Two writes, as the server makes them.
	conn.Write([]byte{0, 0, 0, 0})
	conn.Write(binary.BigEndian.AppendUint32(nil, uint32(c.pindex)))
	return c, true
}

// fakeValue packs a value: its type, then its data.
func fakeValue(w *pmixWriter, v any) {
	switch v := v.(type) {
	case string:
		w.u16(pmixString)
		w.str(v)
	case []byte:
		w.u16(pmixByteObject)
		w.bytes(v)
	case uint16:
		w.u16(pmixUint16)
		w.u16(v)
	case uint32:
		w.u16(pmixUint32)
		w.u32(v)
	case fakeRank:
		w.u16(pmixProcRank)
		w.u32(uint32(v))
	default:
		panic(fmt.Sprintf("fakeValue: %T", v))
	}
}

// fakeKV packs a one-item pack of a key-value.
func fakeKV(w *pmixWriter, key string, v any) {
	w.count(1)
	w.str(key)
	fakeValue(w, v)
}

// statusPayload is a reply of one status.
func statusPayload(enc pmixEncoding, st int32) []byte {
	w := &pmixWriter{enc: enc}
	w.count(1)
	w.i32(st)
	return w.b
}

// nodeOf returns the index of rank's node.
func (f *fakePMIx) nodeOf(rank uint32) int {
	for i, n := range f.nodes {
		for _, r := range n {
			if r == int(rank) {
				return i
			}
		}
	}
	return -1
}

// rankList is ranks as pmix.lpeers lists them: "0,1,5".
func rankList(ranks []int) string {
	s := make([]string, len(ranks))
	for i, r := range ranks {
		s[i] = strconv.Itoa(r)
	}
	return strings.Join(s, ",")
}

// jobData is the reply to REQ: the namespace, then one key-value per
// pack as OpenPMIx's hash store sends them: job-level keys, one
// pmix.node.arr per node (an array of info), one pmix.pblob per rank (a
// byte object holding a nested buffer).
func (f *fakePMIx) jobData(enc pmixEncoding) []byte {
	w := &pmixWriter{enc: enc}
	w.count(1)
	w.str(f.nspace)
	fakeKV(w, "pmix.jobid", f.nspace)
	if f.unknownFirst {
		w.count(1)
		w.str("pmix.topo")
		w.u16(56) // PMIX_TOPO: no length to skip it by
		w.b = append(w.b, "<topology/>"...)
	}
	fakeKV(w, "pmix.job.size", uint32(f.size))
	fakeKV(w, "pmix.num.nodes", uint32(len(f.nodes)))
	for i, node := range f.nodes {
		infos := []pmixInfoItem{{"pmix.hname", fmt.Sprintf("fake-node-%d", i)}, {"pmix.nodeid", uint32(i)},
			{"pmix.lpeers", rankList(node)}, {"pmix.lldr", fakeRank(node[0])}, {"pmix.local.size", uint32(len(node))}}
		w.count(1)
		w.str("pmix.node.arr")
		w.u16(pmixDataArray)
		w.u16(pmixInfo)
		w.size(uint64(len(infos)))
		for j, it := range infos {
			w.str(it.key)
			if j == len(infos)-1 {
				w.u32(2) // PMIX_INFO_ARRAY_END, as OpenPMIx marks the last
			} else {
				w.u32(0)
			}
			fakeValue(w, it.value)
		}
	}
	for r := 0; r < f.size; r++ {
		blob := &pmixWriter{enc: enc}
		blob.count(1)
		blob.u32(uint32(r))
		fakeKV(blob, "pmix.lrank", uint16(r))
		fakeKV(blob, "pmix.hname", fmt.Sprintf("fake-node-%d", f.nodeOf(uint32(r))))
		fakeKV(w, "pmix.pblob", blob.b)
	}
	return w.b
}

// handle answers one request.
func (f *fakePMIx) handle(c *fakePMIxConn, tag uint32, payload []byte) {
	r := &pmixReader{b: payload, enc: c.enc}
	r.one("command")
	cmd := r.byte1("command")
	var reply []byte
	switch cmd {
	case pmixCmdReq:
		reply = f.jobData(c.enc)
	case pmixCmdCommit:
		reply = f.commit(c, r)
	case pmixCmdFence:
		var ok bool
		if reply, ok = f.fence(c, r); !ok {
			return
		}
	case pmixCmdGet:
		reply = f.get(c, r)
	case pmixCmdAbort:
		a := fakeAbort{rank: c.rank, code: r.status("abort code")}
		r.one("message")
		a.msg = r.str("message")
		r.one("procs")
		if n := r.size("procs"); n != 0 {
			f.t.Errorf("fake pmix: rank %d aborts %d procs, not its job", c.rank, n)
		}
		f.mu.Lock()
		f.aborts = append(f.aborts, a)
		f.mu.Unlock()
		reply = statusPayload(c.enc, 0)
	case pmixCmdFinalize:
		f.mu.Lock()
		f.finalized[c.rank] = true
		f.finalizes[c.rank]++
		f.mu.Unlock()
		reply = statusPayload(c.enc, 0)
	default:
		f.t.Errorf("fake pmix: rank %d sent command %d", c.rank, cmd)
		return
	}
	if r.err != nil || r.left() != 0 {
		f.t.Errorf("fake pmix: rank %d, command %d: %v (%d bytes left of %x)", c.rank, cmd, r.err, r.left(), payload)
		return
	}
	f.send(c, tag, reply)
}

// commit stores a COMMIT's key-values: the local scope's, which must
// equal the remote scope's, each in a buffer not self-describing.
func (f *fakePMIx) commit(c *fakePMIxConn, r *pmixReader) []byte {
	var scopes []map[string]any
	for r.err == nil && r.left() > 0 {
		r.one("scope")
		scope := r.byte1("scope")
		r.one("buffer")
		bt := r.byte1("buffer type")
		if scope != byte(len(scopes)+1) || bt != 1 {
			f.t.Errorf("fake pmix: rank %d commits scope %d, buffer type %d", c.rank, scope, bt)
		}
		kvs := &pmixReader{b: r.bytes("buffer"), enc: c.enc}
		m := map[string]any{}
		for kvs.err == nil && kvs.left() > 0 {
			for range kvs.count("puts") {
				kv := kvs.kval("put")
				m[kv.key] = kv.value
			}
		}
		if kvs.err != nil {
			f.t.Errorf("fake pmix: rank %d's commit: %v", c.rank, kvs.err)
		}
		scopes = append(scopes, m)
	}
	if len(scopes) != 2 || fmt.Sprint(scopes[0]) != fmt.Sprint(scopes[1]) {
		f.t.Errorf("fake pmix: rank %d commits scopes %v, want local and remote alike", c.rank, scopes)
		return statusPayload(c.enc, -27)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.committed[c.rank] == nil {
		f.committed[c.rank] = map[string]any{}
	}
	for k, v := range scopes[0] {
		f.committed[c.rank][k] = v
	}
	return statusPayload(c.enc, 0)
}

// fence waits until every rank has reached this fence; it reports false
// when the reply is not to be sent (the connection was closed, the test
// ended).
func (f *fakePMIx) fence(c *fakePMIxConn, r *pmixReader) ([]byte, bool) {
	r.one("procs")
	if n := r.size("procs"); n != 1 {
		f.t.Errorf("fake pmix: rank %d fences %d procs", c.rank, n)
	}
	r.one("proc")
	p, _ := r.typed(pmixProc, "proc", 0).(pmixProcID)
	r.one("infos")
	ninfo := r.size("infos")
	collect := false
	if ninfo > 0 {
		if n := r.count("infos"); n != ninfo {
			f.t.Errorf("fake pmix: %d infos in a pack of %d", ninfo, n)
		}
		for range ninfo {
			it := r.info("info", 0)
			collect = collect || it.key == "pmix.collect" && it.value == true
		}
	}
	if r.err != nil || p != (pmixProcID{f.nspace, pmixRankWildcard}) || !collect {
		f.t.Errorf("fake pmix: rank %d's fence over %+v, collect %v: %v", c.rank, p, collect, r.err)
		return nil, false
	}
	f.mu.Lock()
	f.fences[c.rank]++
	n := f.fences[c.rank]
	if n == f.closeAtFence {
		f.mu.Unlock()
		c.conn.Close()
		return nil, false
	}
	f.arrived[n]++
	f.cond.Broadcast()
	notify := f.fenceArrived
	f.mu.Unlock()
	if notify != nil {
		select {
		case notify <- c.rank:
		case <-f.stop:
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for f.arrived[n] < f.size && !f.stopped {
		f.cond.Wait()
	}
	return statusPayload(c.enc, 0), !f.stopped
}

// get answers a GETNB: a rank's committed key-values (all of them, as
// OpenPMIx sends) or, for the wildcard rank, the job-level ones, each set
// in a byte object after the proc it belongs to; PMIX_ERR_NOT_FOUND for a
// key not there, PMIX_ERR_TIMEOUT while getTimeouts lasts.
func (f *fakePMIx) get(c *fakePMIxConn, r *pmixReader) []byte {
	r.one("namespace")
	ns := r.str("namespace")
	r.one("rank")
	rank := r.u32("rank")
	r.one("infos")
	if n := r.size("infos"); n != 0 {
		f.t.Errorf("fake pmix: rank %d's get carries %d infos", c.rank, n)
	}
	r.one("key")
	key := r.str("key")
	if r.err != nil || ns != f.nspace {
		f.t.Errorf("fake pmix: rank %d gets from namespace %q: %v", c.rank, ns, r.err)
		return statusPayload(c.enc, -27)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.gets[key]++
	if f.getTimeouts > 0 {
		f.getTimeouts--
		return statusPayload(c.enc, pmixErrTimeout)
	}
	kvs := f.committed[rank]
	if rank == pmixRankWildcard {
		kvs = map[string]any{"pmix.job.size": uint32(f.size)}
		if i := f.nodeOf(c.rank); i >= 0 {
			kvs["pmix.lpeers"], kvs["pmix.local.size"] = rankList(f.nodes[i]), uint32(len(f.nodes[i]))
		}
	}
	if _, ok := kvs[key]; !ok {
		return statusPayload(c.enc, -46)
	}
	keys := make([]string, 0, len(kvs))
	for k := range kvs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	bo := &pmixWriter{enc: c.enc}
	bo.count(1)
	bo.proc(f.nspace, rank)
	for _, k := range keys {
		fakeKV(bo, k, kvs[k])
	}
	w := &pmixWriter{enc: c.enc, b: statusPayload(c.enc, 0)}
	w.count(1)
	w.bytes(bo.b)
	return w.b
}
