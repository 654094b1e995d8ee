package boot

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

// Goldens from testdata/pmix: real conversations with Open MPI's mpirun
// and Slurm's srun --mpi=pmix (both OpenPMIx 4.2.2 servers). The "-c-"
// captures are the OpenPMIx C client (init, put ck=hello-value, commit,
// fence, get ck of rank 1, finalize); the "-go-" ones are this client
// under examples/allreduce, rank 1 of 2.

// captureMsg is one message of a capture as it crossed the socket.
type captureMsg struct {
	dir byte   // '>' client to server, '<' server to client
	b   []byte // a connection request or reply, or one or more frames
}

// readCapture reads testdata/pmix/<name>.txt: '#' lines are comments, the
// others a direction and the message in hex.
func readCapture(t testing.TB, name string) []captureMsg {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "pmix", name+".txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var msgs []captureMsg
	s := bufio.NewScanner(f)
	s.Buffer(nil, 1<<20)
	for line := 1; s.Scan(); line++ {
		text := strings.TrimSpace(s.Text())
		if text == "" || text[0] == '#' {
			continue
		}
		dir, hexText, ok := strings.Cut(text, " ")
		b, err := hex.DecodeString(strings.TrimSpace(hexText))
		if !ok || (dir != ">" && dir != "<") || err != nil || len(b) == 0 {
			t.Fatalf("%s.txt line %d: want '>' or '<', a space and hex: %v", name, line, err)
		}
		msgs = append(msgs, captureMsg{dir: dir[0], b: b})
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	if len(msgs) < 2 || msgs[0].dir != '>' || msgs[1].dir != '<' || len(msgs[1].b) != 8 {
		t.Fatalf("%s.txt does not start with a connection request and its 8-byte reply", name)
	}
	return msgs
}

// pmixFrame is one message after the handshake.
type pmixFrame struct {
	h       pmixHeader
	pad     uint32 // the header's last word, 0 on the wire
	payload []byte
}

func (f pmixFrame) bytes() []byte {
	b := appendHeader(nil, f.h)
	binary.BigEndian.PutUint32(b[12:], f.pad)
	return append(b, f.payload...)
}

// captureFrames returns the frames of one direction after the handshake
// (the first two messages), in order. A line may hold several frames: a
// server's replies written back to back are logged as one.
func captureFrames(t testing.TB, msgs []captureMsg, dir byte) []pmixFrame {
	t.Helper()
	var out []pmixFrame
	for i, m := range msgs[2:] {
		if m.dir != dir {
			continue
		}
		for b := m.b; len(b) > 0; {
			h, err := parseHeader(b)
			if err != nil || len(b) < pmixHeaderLen+int(h.nbytes) {
				t.Fatalf("message %d (%c): %d bytes left do not hold a frame: %v", i+3, dir, len(b), err)
			}
			end := pmixHeaderLen + int(h.nbytes)
			out = append(out, pmixFrame{h: h, pad: binary.BigEndian.Uint32(b[12:]), payload: b[pmixHeaderLen:end]})
			b = b[end:]
		}
	}
	return out
}

// byTag indexes frames by tag; a tag must not repeat.
func byTag(t testing.TB, frames []pmixFrame) map[uint32]pmixFrame {
	t.Helper()
	m := map[uint32]pmixFrame{}
	for _, f := range frames {
		if _, dup := m[f.h.tag]; dup {
			t.Fatalf("tag %d appears twice", f.h.tag)
		}
		m[f.h.tag] = f
	}
	return m
}

// firstDiff describes where got and want part.
func firstDiff(got, want []byte) string {
	i := 0
	for i < len(got) && i < len(want) && got[i] == want[i] {
		i++
	}
	at := func(b []byte) string { return hex.EncodeToString(b[i:min(len(b), i+24)]) }
	return fmt.Sprintf("%d and %d bytes, first difference at byte %d: got %s…, want %s…", len(got), len(want), i, at(got), at(want))
}

// checkFrame compares a frame the client sent with the capture's: the
// header's fields, then the payload byte for byte.
func checkFrame(t testing.TB, what string, got, want pmixFrame) bool {
	t.Helper()
	if got.h != want.h || got.pad != want.pad {
		t.Errorf("%s: header %+v pad %d, captured %+v pad %d", what, got.h, got.pad, want.h, want.pad)
		return false
	}
	if !bytes.Equal(got.payload, want.payload) {
		t.Errorf("%s (tag %d): payload of %s", what, got.h.tag, firstDiff(got.payload, want.payload))
		return false
	}
	return true
}

// readPMIxFrame reads one frame (header and payload).
func readPMIxFrame(r io.Reader) (pmixFrame, error) {
	var hdr [pmixHeaderLen]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return pmixFrame{}, err
	}
	h, err := parseHeader(hdr[:])
	if err != nil {
		return pmixFrame{}, err
	}
	f := pmixFrame{h: h, pad: binary.BigEndian.Uint32(hdr[12:]), payload: make([]byte, h.nbytes)}
	_, err = io.ReadFull(r, f.payload)
	return f, err
}

// setPMIxCredential makes the client send uid and gid, as the captures'
// processes (root) did, until the test ends.
func setPMIxCredential(t *testing.T, uid, gid uint32) {
	uidWas, gidWas := pmixUID, pmixGID
	pmixUID = func() uint32 { return uid }
	pmixGID = func() uint32 { return gid }
	t.Cleanup(func() { pmixUID, pmixGID = uidWas, gidWas })
}

// replay serves one client from a capture: the connection request (when
// hello is set) and then every frame, each checked against the capture's
// client frame of its tag and answered with the capture's server frames
// of that tag. It ends when the client closes the connection or sends
// what the capture does not hold.
type replay struct {
	t     *testing.T
	msgs  []captureMsg
	hello bool

	mu       sync.Mutex
	conn     net.Conn
	stopped  bool
	served   []uint32 // the tags answered, in order
	finished chan struct{}
}

// startReplay serves the client on conn, or on the first connection ln
// accepts when conn is nil; the test's cleanup ends it.
func startReplay(t *testing.T, ln net.Listener, conn net.Conn, msgs []captureMsg, hello bool) *replay {
	r := &replay{t: t, msgs: msgs, hello: hello, conn: conn, finished: make(chan struct{})}
	go func() {
		defer close(r.finished)
		if conn == nil {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			r.mu.Lock()
			r.conn, conn = c, c
			stopped := r.stopped
			r.mu.Unlock()
			if stopped {
				c.Close()
				return
			}
		}
		defer conn.Close()
		r.serve(conn)
	}()
	t.Cleanup(func() {
		if ln != nil {
			ln.Close()
		}
		r.mu.Lock()
		r.stopped = true
		if r.conn != nil {
			r.conn.Close()
		}
		r.mu.Unlock()
		<-r.finished
	})
	return r
}

// wait returns the tags served once the client has closed the connection.
func (r *replay) wait() []uint32 {
	<-r.finished
	return r.served
}

func (r *replay) serve(conn net.Conn) {
	t := r.t
	client := byTag(t, captureFrames(t, r.msgs, '>'))
	server := map[uint32][]pmixFrame{}
	for _, f := range captureFrames(t, r.msgs, '<') {
		server[f.h.tag] = append(server[f.h.tag], f)
	}
	if r.hello {
		var hdr [pmixHeaderLen]byte
		if _, err := io.ReadFull(conn, hdr[:]); err != nil {
			t.Errorf("reading the connection request: %v", err)
			return
		}
		req := make([]byte, pmixHeaderLen+int(binary.NativeEndian.Uint32(hdr[8:])))
		copy(req, hdr[:])
		if _, err := io.ReadFull(conn, req[pmixHeaderLen:]); err != nil {
			t.Errorf("reading the connection request: %v", err)
			return
		}
		if !bytes.Equal(req, r.msgs[0].b) {
			t.Errorf("connection request: %s", firstDiff(req, r.msgs[0].b))
			return
		}
		if _, err := conn.Write(r.msgs[1].b); err != nil {
			t.Errorf("writing the connection reply: %v", err)
			return
		}
	}
	for {
		got, err := readPMIxFrame(conn)
		if err != nil {
			r.mu.Lock()
			stopped := r.stopped
			r.mu.Unlock()
			if !stopped && !errors.Is(err, io.EOF) {
				t.Errorf("reading frame %d: %v", len(r.served)+1, err)
			}
			return
		}
		want, ok := client[got.h.tag]
		if !ok {
			t.Errorf("the client sent tag %d, which the capture lacks: %x", got.h.tag, got.payload)
			return
		}
		if !checkFrame(t, fmt.Sprintf("client frame %d", len(r.served)+1), got, want) {
			return
		}
		r.served = append(r.served, got.h.tag)
		for _, f := range server[got.h.tag] {
			if _, err := conn.Write(f.bytes()); err != nil {
				t.Errorf("writing the reply to tag %d: %v", got.h.tag, err)
				return
			}
		}
	}
}

// captureTags lists the tags of a capture's client frames, in order.
func captureTags(t testing.TB, msgs []captureMsg) []uint32 {
	var tags []uint32
	for _, f := range captureFrames(t, msgs, '>') {
		tags = append(tags, f.h.tag)
	}
	return tags
}

// pipeClient returns a client past its handshake (with peer index pindex)
// on one end of a net.Pipe, its reader running, and the other end for the
// test to serve.
func pipeClient(t *testing.T, enc pmixEncoding, bfrops, nspace string, rank uint32, pindex int32) (*pmixClient, net.Conn) {
	cc, sc := net.Pipe()
	c := &pmixClient{conn: cc, enc: enc, bfrops: bfrops, nspace: nspace, rank: rank, pindex: pindex, nextTag: pmixFirstTag,
		pending: map[uint32]chan []byte{}, done: make(chan struct{}), puts: map[string]string{}, kv: map[string]string{}}
	go c.readLoop()
	t.Cleanup(func() {
		cc.Close()
		sc.Close()
		<-c.done
	})
	return c, sc
}

// cCaptures are the C client's conversations: rank 0 of 2 of the job
// nspace, the encoding it announced and the peer index it was given.
var cCaptures = []struct {
	name   string
	enc    pmixEncoding
	bfrops string
	nspace string
	pindex int32
	munge  bool // the connection request carries a munge credential
}{
	{"openmpi-c-v41", pmixV4, "v41", "1365114881", 0, false},
	{"openmpi-c-v3", pmixV3, "v3", "750649345", 1, false},
	{"slurm-c-v41", pmixV4, "v41", "slurm.pmix.3.0", 0, true},
}

// goCaptures are this client's conversations as rank 1 of 2: the
// variables besides the namespace, rank and URIs its run had, and what it
// learnt.
var goCaptures = []struct {
	name     string
	env      map[string]string
	enc      pmixEncoding
	bfrops   string
	nspace   string
	pindex   int32
	protocol string
	secret   string // the value of commtune-secret rank 0 put
}{
	{"openmpi-go-v41", nil, pmixV4, "v41", "1671692289", 1, "PMIx v41",
		"afa11b61c66282a43d1cc3594e10522c8f86c325dc296bd2fbb7e17471b6014a"},
	{"openmpi-go-v3", map[string]string{EnvPMIxEncoding: "v3"}, pmixV3, "v3", "1667497985", 0, "PMIx v3",
		"f41e3b29b8964d940c68d2325e0fe31d3d112fd8e53d775aac77be5a5e151e13"},
	{"slurm-go-v41", map[string]string{EnvPMIxSecurity: "munge,native"}, pmixV4, "v41", "slurm.pmix.3.0", 1, "PMIx v41",
		"bd169299f8095b9ef90b41799bafd76de9337ea307c769fba19e7dadf36d822a"},
}

// TestPMIxGoldenHello builds the connection requests of the captures with
// appendHello: the C client's (version "4.2.2rc2") and this client's
// ("4.2.2", rank 1), byte for byte, header included.
func TestPMIxGoldenHello(t *testing.T) {
	type row struct {
		name string
		h    pmixHello
	}
	var rows []row
	for _, c := range cCaptures {
		if !c.munge {
			rows = append(rows, row{c.name, pmixHello{nspace: c.nspace, rank: 0, version: "4.2.2rc2", bfrops: c.bfrops}})
		}
	}
	for _, c := range goCaptures {
		rows = append(rows, row{c.name, pmixHello{nspace: c.nspace, rank: 1, version: pmixVersion, bfrops: c.bfrops}})
	}
	for _, tc := range rows {
		t.Run(tc.name, func(t *testing.T) {
			want := readCapture(t, tc.name)[0].b
			if got := appendHello(nil, tc.h); !bytes.Equal(got, want) {
				t.Fatalf("appendHello: %s", firstDiff(got, want))
			}
			// Appending keeps what the buffer held and fills in the
			// length at the right place.
			prefix := []byte("xyz")
			if got := appendHello(prefix, tc.h); !bytes.Equal(got[:3], prefix) || !bytes.Equal(got[3:], want) {
				t.Fatalf("appendHello after 3 bytes: %s", firstDiff(got[3:], want))
			}
		})
	}
}

// TestPMIxGoldenCClient replays the C client's conversations through this
// client's own code paths over a net.Pipe: the job data request, a Put of
// ck=hello-value and a Fence (commit, then fence), a get of rank 1's ck,
// and Close (finalize). Every frame it sends must equal the C client's,
// header (peer index, tag, length) and payload; the reply to the get must
// decode to hello-value.
func TestPMIxGoldenCClient(t *testing.T) {
	for _, tc := range cCaptures {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testCtx(t)
			msgs := readCapture(t, tc.name)
			if p, err := parseHelloReply(msgs[1].b); err != nil || p != tc.pindex {
				t.Fatalf("connection reply: peer index %d, %v; want %d", p, err, tc.pindex)
			}
			c, srv := pipeClient(t, tc.enc, tc.bfrops, tc.nspace, 0, tc.pindex)
			rp := startReplay(t, nil, srv, msgs, false)

			body, err := c.request(ctx, testTimeout, "the job data request", c.command(pmixCmdReq).b)
			if err != nil {
				t.Fatal(err)
			}
			if s := parseJobData(body, tc.enc, tc.nspace, 0); s.size != 2 || !reflect.DeepEqual(s.lpeers, []int{0, 1}) {
				t.Errorf("job data: %+v, want size 2 and local peers [0 1]", s)
			}
			if err := c.Put(ctx, "ck", "hello-value"); err != nil {
				t.Fatal(err)
			}
			if err := c.Fence(ctx); err != nil {
				t.Fatal(err)
			}
			v, err := c.get(ctx, time.Now().Add(time.Minute), 1, "ck")
			if err != nil || v != "hello-value" {
				t.Fatalf("get of rank 1's ck: %v (%T), %v", v, v, err)
			}
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
			if got, want := rp.wait(), captureTags(t, msgs); !reflect.DeepEqual(got, want) {
				t.Fatalf("served tags %v, the capture has %v", got, want)
			}
		})
	}
}

// TestPMIxGoldenGoClient replays this client's captured conversations
// from end to end: a loopback server answers with the captured replies
// while discover, with the variables the real run had, connects, reads
// the job and the secret, and the test then makes examples/allreduce's
// calls (the puts its commit carried, a fence, the gets of rank 0's
// addresses, two fences, Close). Every byte the client sends must equal
// the capture, from the connection request to the finalize.
func TestPMIxGoldenGoClient(t *testing.T) {
	setPMIxCredential(t, 0, 0)
	for _, tc := range goCaptures {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testCtx(t)
			msgs := readCapture(t, tc.name)
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			rp := startReplay(t, ln, nil, msgs, true)
			uri := tc.nspace + ".0;tcp4://" + ln.Addr().String()
			env := map[string]string{
				EnvPMIxNamespace: tc.nspace, EnvPMIxRank: "1", EnvPMIxVersion: "4.2.2", EnvPMIxSecurity: "native",
				"PMIX_SERVER_URI41": uri, "PMIX_SERVER_URI4": uri, "PMIX_SERVER_URI3": uri,
				"PMIX_SERVER_URI2": uri, "PMIX_SERVER_URI21": uri,
			}
			for k, v := range tc.env {
				env[k] = v
			}
			j, err := discover(ctx, lookupMap(env))
			if err != nil {
				t.Fatal(err)
			}
			sum := sha256.Sum256([]byte("commtune job secret\x00" + tc.nspace + "\x00" + tc.secret))
			want := Job{Rank: 1, Size: 2, LocalRank: 1, LocalSize: 2, ID: jobID(tc.nspace), Secret: sum[:],
				Node: "pmix-node-0", KV: j.KV, Source: SourcePMIx, Protocol: tc.protocol}
			if !reflect.DeepEqual(*j, want) {
				t.Errorf("job %+v\nwant %+v", *j, want)
			}
			if c := j.KV.(*pmixClient); c.pindex != tc.pindex || c.enc != tc.enc {
				t.Errorf("peer index %d, encoding %d; want %d, %d", c.pindex, c.enc, tc.pindex, tc.enc)
			}
			client := byTag(t, captureFrames(t, msgs, '>'))
			for k, v := range capturedPuts(t, client[104].payload, tc.enc) {
				if err := j.KV.Put(ctx, k, v); err != nil {
					t.Fatal(err)
				}
			}
			if err := j.KV.Fence(ctx); err != nil {
				t.Fatal(err)
			}
			for _, key := range []string{"tcp/0", "node/0", "cpus/0"} {
				v, err := j.KV.Get(ctx, key)
				if err != nil {
					t.Fatal(err)
				}
				if ok := map[string]bool{"tcp/0": strings.HasPrefix(v, "127.0.0.1:"), "node/0": v == "pmix-node-0", "cpus/0": v == "0"}[key]; !ok {
					t.Errorf("%s = %q", key, v)
				}
			}
			for range 2 {
				if err := j.KV.Fence(ctx); err != nil {
					t.Fatal(err)
				}
			}
			if err := j.Close(); err != nil {
				t.Fatal(err)
			}
			if got, want := rp.wait(), captureTags(t, msgs); !reflect.DeepEqual(got, want) {
				t.Fatalf("served tags %v, the capture has %v", got, want)
			}
		})
	}
}

// capturedPuts decodes a commit: the key-values of its local scope, which
// must equal its remote scope's.
func capturedPuts(t *testing.T, payload []byte, enc pmixEncoding) map[string]string {
	t.Helper()
	r := &pmixReader{b: payload, enc: enc}
	r.one("command")
	if cmd := r.byte1("command"); cmd != pmixCmdCommit {
		t.Fatalf("frame 104 holds command %d, not a commit", cmd)
	}
	var scopes []map[string]string
	for r.err == nil && r.left() > 0 {
		r.one("scope")
		r.byte1("scope")
		r.one("buffer")
		r.byte1("buffer type")
		kvs := &pmixReader{b: r.bytes("buffer"), enc: enc}
		m := map[string]string{}
		for kvs.err == nil && kvs.left() > 0 {
			for range kvs.count("puts") {
				kv := kvs.kval("put")
				m[kv.key], _ = kv.value.(string)
			}
		}
		if kvs.err != nil {
			t.Fatal(kvs.err)
		}
		scopes = append(scopes, m)
	}
	if r.err != nil || len(scopes) != 2 || !reflect.DeepEqual(scopes[0], scopes[1]) || len(scopes[0]) == 0 {
		t.Fatalf("commit: %v, scopes %v", r.err, scopes)
	}
	return scopes[0]
}

// TestPMIxGoldenDecode decodes every server message of the captures: the
// connection reply's peer index, the job data (size 2, this node's ranks
// 0 and 1, in both encodings, from both servers), the gets' values and
// every status reply.
func TestPMIxGoldenDecode(t *testing.T) {
	type row struct {
		name   string
		enc    pmixEncoding
		nspace string
		rank   uint32
		pindex int32
		gets   map[uint32][2]string // tag → key, value
	}
	var rows []row
	for _, c := range cCaptures {
		rows = append(rows, row{c.name, c.enc, c.nspace, 0, c.pindex, map[uint32][2]string{104: {"ck", "hello-value"}}})
	}
	for _, c := range goCaptures {
		gets := map[uint32][2]string{103: {secretKey, c.secret}, 107: {"node/0", "pmix-node-0"}, 108: {"cpus/0", "0"}}
		rows = append(rows, row{c.name, c.enc, c.nspace, 1, c.pindex, gets})
	}
	for _, tc := range rows {
		t.Run(tc.name, func(t *testing.T) {
			msgs := readCapture(t, tc.name)
			if p, err := parseHelloReply(msgs[1].b); err != nil || p != tc.pindex {
				t.Errorf("connection reply: peer index %d, %v; want %d", p, err, tc.pindex)
			}
			for _, f := range captureFrames(t, msgs, '<') {
				switch get, isGet := tc.gets[f.h.tag]; {
				case f.h.tag == pmixFirstTag:
					s := parseJobData(f.payload, tc.enc, tc.nspace, tc.rank)
					if s.size != 2 || !reflect.DeepEqual(s.lpeers, []int{0, 1}) {
						t.Errorf("job data: %+v, want size 2 and local peers [0 1]", s)
					}
					if s := parseJobData(f.payload, tc.enc, tc.nspace+"x", tc.rank); s.size != 0 || s.lpeers != nil {
						t.Errorf("another namespace's job data gave %+v", s)
					}
					if s := parseJobData(f.payload, tc.enc, tc.nspace, 7); s.size != 2 || s.lpeers != nil {
						t.Errorf("job data for a rank on no node: %+v, want size 2 and no local peers", s)
					}
				case isGet:
					v, err := parseGetReply(f.payload, tc.enc, get[0])
					if err != nil || v != get[1] {
						t.Errorf("get of %s: %v (%T), %v; want %q", get[0], v, v, err, get[1])
					}
					if _, err := parseGetReply(f.payload, tc.enc, "absent"); err == nil || !errors.Is(err, ErrPMIx) || !strings.Contains(err.Error(), "does not hold it") {
						t.Errorf("get of a key the reply lacks: %v", err)
					}
				case len(f.payload) <= 8 && f.h.tag > pmixFirstTag:
					r := &pmixReader{b: f.payload, enc: tc.enc}
					if st := r.status("status"); r.err != nil || st != 0 || r.left() != 0 {
						t.Errorf("tag %d: status %d, %v, %d bytes left", f.h.tag, st, r.err, r.left())
					}
				}
			}
		})
	}
}

// TestPMIxGoldenTruncated cuts the captured job data and get replies at
// every byte: the decoders must never panic nor report a wrong value; a
// cut get reply is an ErrPMIx error, a cut job data at most misses facts.
func TestPMIxGoldenTruncated(t *testing.T) {
	for _, c := range cCaptures {
		msgs := readCapture(t, c.name)
		server := byTag(t, captureFrames(t, msgs, '<'))
		job, got := server[pmixFirstTag].payload, server[104].payload
		for n := range len(job) {
			s := parseJobData(job[:n], c.enc, c.nspace, 0)
			if (s.size != 0 && s.size != 2) || (s.lpeers != nil && !reflect.DeepEqual(s.lpeers, []int{0, 1})) {
				t.Fatalf("%s: job data cut at %d: %+v", c.name, n, s)
			}
		}
		for n := range len(got) {
			if v, err := parseGetReply(got[:n], c.enc, "ck"); err == nil || !errors.Is(err, ErrPMIx) {
				t.Fatalf("%s: get reply cut at %d: %v, %v", c.name, n, v, err)
			}
		}
	}
}

// TestPMIxGoldenHeader: the captured frames' headers re-encode as sent.
func TestPMIxGoldenHeader(t *testing.T) {
	for _, name := range []string{"openmpi-c-v41", "openmpi-go-v3", "slurm-go-v41"} {
		msgs := readCapture(t, name)
		for _, dir := range []byte{'>', '<'} {
			for _, f := range captureFrames(t, msgs, dir) {
				b := f.bytes()
				h, err := parseHeader(b)
				if err != nil || h != f.h || f.pad != 0 || !bytes.Equal(appendHeader(nil, h), b[:pmixHeaderLen]) {
					t.Fatalf("%s: header %x: %+v, %v", name, b[:pmixHeaderLen], h, err)
				}
			}
		}
	}
}
