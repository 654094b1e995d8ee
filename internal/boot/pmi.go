package boot

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/commtune/commtune/internal/setting"
)

// Variables PMI launchers set (Hydra's mpiexec, Slurm's srun --mpi=pmi2),
// and commtune's choice of wire protocol.
const (
	EnvPMIFD   = "PMI_FD"   // an inherited socket to the PMI server
	EnvPMIPort = "PMI_PORT" // host:port of the PMI server (mpiexec -pmi-port)
	// EnvHydraIface is how MPICH's Hydra passes its -iface to the ranks.
	EnvHydraIface = "MPIR_CVAR_NEMESIS_TCP_NETWORK_IFACE"
	EnvPMIID      = "PMI_ID"    // this process's id for PMI_PORT
	EnvPMIRank    = "PMI_RANK"  // rank, with PMI_FD
	EnvPMISize    = "PMI_SIZE"  // size, with PMI_FD
	EnvPMIJobID   = "PMI_JOBID" // set by Slurm's pmi2 plugin; fullinit must send it
	// EnvPMIVersion forces the wire protocol: 1, 2, or auto (PMI-2 under
	// Slurm, PMI-1 otherwise; Hydra answers both on PMI_FD).
	EnvPMIVersion = "COMMTUNE_PMI"
)

// SourcePMI is Job.Source for a job started by a PMI launcher.
const SourcePMI = "pmi"

// PMI time-outs: a reply to a plain request comes at once from a live
// server; a barrier waits for the slowest rank to start.
const (
	pmiReplyTimeout = 30 * time.Second
	pmiFenceTimeout = 5 * time.Minute
)

// secretKey is where rank 0 publishes the random half of the job secret.
const secretKey = "commtune-secret"

// pmiClient is a PMI-1 or PMI-2 connection, and the job's KV over it.
// Requests are serialized: PMI has one request in flight per process.
type pmiClient struct {
	mu      sync.Mutex
	conn    net.Conn
	r       *bufio.Reader
	version int
	kvsname string
	valMax  int  // longest value one put may carry
	keyMax  int  // longest key
	framed  bool // PMI-2 after init: length-prefixed messages
	closed  bool
	slurm   bool // started by Slurm (PMI_JOBID), whose PMI-2 takes "abort"
}

// detectPMI recognises a PMI launcher and runs the PMI handshake.
func detectPMI(ctx context.Context, lookup func(string) (string, bool)) (*Job, bool, error) {
	fd, hasFD := lookup(EnvPMIFD)
	port, hasPort := lookup(EnvPMIPort)
	if !hasFD && !hasPort {
		return nil, false, nil
	}
	version, err := pmiVersion(lookup, hasFD)
	if err != nil {
		return nil, true, err
	}
	c := &pmiClient{version: version, valMax: 1024, keyMax: 64}
	_, c.slurm = lookup(EnvPMIJobID)
	var rank, size int
	if hasFD {
		if c.conn, err = fdConn(fd); err != nil {
			return nil, true, err
		}
		if rank, size, err = rankSize(lookup); err != nil {
			c.conn.Close()
			return nil, true, err
		}
	} else {
		if _, ok := lookup(EnvPMIID); !ok {
			return nil, true, fmt.Errorf("%w: %s is set but %s is not", ErrPMI, EnvPMIPort, EnvPMIID)
		}
		d := net.Dialer{Timeout: pmiReplyTimeout}
		if c.conn, err = d.DialContext(ctx, "tcp", port); err != nil {
			return nil, true, fmt.Errorf("%w: connecting to %s=%s: %v", ErrPMI, EnvPMIPort, port, err)
		}
	}
	c.r = bufio.NewReaderSize(c.conn, 4096)
	j, err := c.start(ctx, lookup, hasFD, rank, size)
	if err != nil {
		c.conn.Close()
		return nil, true, err
	}
	if !hasFD {
		j.Server = port
	}
	j.Iface, _ = lookup(EnvHydraIface)
	return j, true, nil
}

// pmiVersion reads COMMTUNE_PMI: auto picks PMI-2 under Slurm (which sets
// PMI_JOBID), PMI-1 otherwise.
func pmiVersion(lookup func(string) (string, bool), hasFD bool) (int, error) {
	v, err := pmiSetting(lookup)
	switch {
	case err != nil:
		return 0, err
	case v == 0:
		if _, slurm := lookup(EnvPMIJobID); slurm && hasFD {
			return 2, nil
		}
		return 1, nil
	case v == 2 && !hasFD:
		text, _ := lookup(EnvPMIVersion)
		port, _ := lookup(EnvPMIPort)
		return 0, fmt.Errorf("%w: %w", ErrPMI, setting.Conflict(setting.Env(EnvPMIVersion, text), setting.Env(EnvPMIPort, port),
			"%s for PMI-2, which runs on the inherited socket (or %s=1)", EnvPMIFD, EnvPMIVersion))
	}
	return v, nil
}

// pmiSetting checks COMMTUNE_PMI alone: 1, 2, or 0 for auto (also when
// unset or blank).
func pmiSetting(lookup func(string) (string, bool)) (int, error) {
	v, _ := lookup(EnvPMIVersion)
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "", "auto":
		return 0, nil
	case "1":
		return 1, nil
	case "2":
		return 2, nil
	}
	return 0, fmt.Errorf("%w: %w", ErrPMI, setting.Bad(setting.Env(EnvPMIVersion, v), "1, 2 or auto"))
}

func fdConn(s string) (net.Conn, error) {
	fd, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || fd < 0 {
		return nil, fmt.Errorf("%w: %s=%q is not a file descriptor", ErrPMI, EnvPMIFD, s)
	}
	f := os.NewFile(uintptr(fd), "pmi")
	conn, err := net.FileConn(f)
	f.Close() // FileConn holds its own descriptor
	if err != nil {
		return nil, fmt.Errorf("%w: %s=%d is not a socket: %v", ErrPMI, EnvPMIFD, fd, err)
	}
	return conn, nil
}

func rankSize(lookup func(string) (string, bool)) (rank, size int, err error) {
	p := envParser{lookup: lookup, setter: "the PMI launcher sets it with " + EnvPMIFD, sentinel: ErrPMI}
	size = p.int(EnvPMISize, 1, MaxSize, "")
	rank = p.int(EnvPMIRank, 0, size-1, EnvPMISize)
	return rank, size, p.err
}

// start runs the handshake: rank and size, the key-value space's name,
// the limits, the placement of ranks on nodes, and the job secret.
func (c *pmiClient) start(ctx context.Context, lookup func(string) (string, bool), hasFD bool, rank, size int) (*Job, error) {
	var err error
	if !hasFD {
		if rank, size, err = c.initack(ctx, lookup); err != nil {
			return nil, err
		}
	}
	init, err := c.call1(ctx, pmiReplyTimeout, "response_to_init", fmt.Sprintf("cmd=init pmi_version=%d pmi_subversion=%d", c.version, 2-c.version))
	if err != nil {
		return nil, err
	}
	if v := init["pmi_version"]; v != strconv.Itoa(c.version) {
		return nil, fmt.Errorf("%w: asked for PMI-%d, the server answers version %q", ErrPMI, c.version, v)
	}
	c.framed = c.version == 2
	var mapping string
	if c.version == 1 {
		maxes, err := c.call1(ctx, pmiReplyTimeout, "maxes", "cmd=get_maxes")
		if err != nil {
			return nil, err
		}
		c.keyMax, c.valMax = atoiOr(maxes["keylen_max"], 64), atoiOr(maxes["vallen_max"], 1024)
		kvs, err := c.call1(ctx, pmiReplyTimeout, "my_kvsname", "cmd=get_my_kvsname")
		if err != nil {
			return nil, err
		}
		c.kvsname = kvs["kvsname"]
		if r, err := c.call1(ctx, pmiReplyTimeout, "get_result", fmt.Sprintf("cmd=get kvsname=%s key=PMI_process_mapping", c.kvsname)); err == nil {
			mapping = r["value"]
		}
	} else {
		kv := []string{"pmirank", strconv.Itoa(rank), "threaded", "FALSE"}
		if id, ok := lookup(EnvPMIJobID); ok {
			kv = append([]string{"pmijobid", id}, kv...) // Slurm wants it
		}
		full, err := c.call2(ctx, pmiReplyTimeout, "fullinit-response", "fullinit", kv...)
		if err != nil {
			return nil, err
		}
		if r, s := atoiOr(full["rank"], -1), atoiOr(full["size"], -1); r != rank || s != size {
			return nil, fmt.Errorf("%w: fullinit says rank %d of %d, %s says %d of %d", ErrPMI, r, s, EnvPMIRank, rank, size)
		}
		if id, err := c.call2(ctx, pmiReplyTimeout, "job-getid-response", "job-getid"); err == nil {
			c.kvsname = id["jobid"]
		} else if v, ok := lookup(EnvPMIJobID); ok {
			c.kvsname = v
		} else {
			return nil, err
		}
		if r, err := c.call2(ctx, pmiReplyTimeout, "info-getjobattr-response", "info-getjobattr", "key", "PMI_process_mapping"); err == nil && r["found"] == "TRUE" {
			mapping = r["value"]
		}
	}
	if c.kvsname == "" {
		return nil, fmt.Errorf("%w: the server named no key-value space", ErrPMI)
	}
	j := &Job{Rank: rank, Size: size, KV: c, Source: SourcePMI, ID: jobID(c.kvsname), Protocol: "PMI-" + strconv.Itoa(c.version)}
	if err := placeRanks(j, mapping); err != nil {
		return nil, err
	}
	if j.Secret, err = deriveSecret(ctx, c, rank, c.kvsname); err != nil {
		return nil, err
	}
	return j, nil
}

// initack is the PMI_PORT handshake: the server answers with the size and
// this process's rank.
func (c *pmiClient) initack(ctx context.Context, lookup func(string) (string, bool)) (rank, size int, err error) {
	id, _ := lookup(EnvPMIID)
	if _, err := c.call1(ctx, pmiReplyTimeout, "initack", "cmd=initack pmiid="+strings.TrimSpace(id)); err != nil {
		return 0, 0, err
	}
	rank, size = -1, -1
	for rank < 0 || size < 0 {
		f, err := c.read(ctx, pmiReplyTimeout)
		if err != nil {
			return 0, 0, err
		}
		if f.cmd() != "set" {
			return 0, 0, fmt.Errorf("%w: after initack, want cmd=set, got %q", ErrPMI, f.cmd())
		}
		if v, ok := f["size"]; ok {
			size = atoiOr(v, 0)
		}
		if v, ok := f["rank"]; ok {
			rank = atoiOr(v, -1)
		}
	}
	if size < 1 || size > MaxSize || rank >= size {
		return 0, 0, fmt.Errorf("%w: initack gives rank %d of %d", ErrPMI, rank, size)
	}
	// Hydra sends "cmd=set debug=…" next; call1 skips such lines.
	return rank, size, nil
}

// placeRanks sets the node identity and the local rank and size from the
// process mapping; without one (some servers do not publish it), ranks
// compare host names.
func placeRanks(j *Job, mapping string) error {
	if mapping == "" {
		j.Node, j.LocalRank, j.LocalSize = hostname(), 0, 1
		return nil
	}
	nodes, err := parseProcessMapping(mapping, j.Size)
	if err != nil {
		return err
	}
	me := nodes[j.Rank]
	j.Node = "pmi-node-" + strconv.Itoa(me)
	for r, n := range nodes {
		if n == me {
			if r < j.Rank {
				j.LocalRank++
			}
			j.LocalSize++
		}
	}
	return nil
}

// deriveSecret: rank 0 puts 32 random bytes in the launcher's key-value
// space, every rank reads them after a barrier and hashes them with the
// space's name. The space is reachable only through the launcher's
// per-process connections, so only the job's processes learn the secret.
func deriveSecret(ctx context.Context, c KV, rank int, space string) ([]byte, error) {
	if rank == 0 {
		b := make([]byte, 32)
		if _, err := rand.Read(b); err != nil {
			return nil, fmt.Errorf("making the job secret: %w", err)
		}
		if err := c.Put(ctx, secretKey, hex.EncodeToString(b)); err != nil {
			return nil, err
		}
	}
	if err := c.Fence(ctx); err != nil {
		return nil, err
	}
	v, err := c.Get(ctx, secretKey)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256([]byte("commtune job secret\x00" + space + "\x00" + v))
	return sum[:], nil
}

// jobID turns a key-value space name into a job id: itself when it is a
// valid one (Hydra's kvs_PID_…), else a hash of it.
func jobID(kvsname string) string {
	if ValidJobID(kvsname) {
		return kvsname
	}
	sum := sha256.Sum256([]byte(kvsname))
	return "pmi-" + hex.EncodeToString(sum[:8])
}

func atoiOr(s string, def int) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		return def
	}
	return n
}

// call1 sends a PMI-1 line and reads the reply of command want, checking
// its rc.
func (c *pmiClient) call1(ctx context.Context, timeout time.Duration, want, line string) (pmiFields, error) {
	if err := c.write(ctx, timeout, []byte(line+"\n")); err != nil {
		return nil, err
	}
	for {
		f, err := c.read(ctx, timeout)
		if err != nil {
			return nil, err
		}
		if f.cmd() == "set" && want != "set" {
			continue // PMI_PORT's trailing "cmd=set debug=0"
		}
		return checkPMIReply(f, want, line)
	}
}

// call2 sends a PMI-2 message and reads the reply of command want.
func (c *pmiClient) call2(ctx context.Context, timeout time.Duration, want, cmd string, kv ...string) (pmiFields, error) {
	if err := c.write(ctx, timeout, formatPMI2(cmd, kv...)); err != nil {
		return nil, err
	}
	f, err := c.read(ctx, timeout)
	if err != nil {
		return nil, err
	}
	return checkPMIReply(f, want, "cmd="+cmd)
}

func checkPMIReply(f pmiFields, want, req string) (pmiFields, error) {
	if f.cmd() != want {
		return nil, fmt.Errorf("%w: to %q the server answered cmd=%s, want %s", ErrPMI, clip(req), f.cmd(), want)
	}
	if rc, ok := f["rc"]; ok && rc != "0" {
		msg := f["msg"]
		if msg == "" {
			msg = f["errmsg"]
		}
		return f, &pmiError{req: clip(req), rc: rc, msg: msg, fields: f}
	}
	return f, nil
}

// pmiError is a reply with a non-zero rc.
type pmiError struct {
	req, rc, msg string
	fields       pmiFields
}

func (e *pmiError) Error() string {
	return fmt.Sprintf("pmi: %q failed: rc=%s %s", e.req, e.rc, e.msg)
}

func (e *pmiError) Unwrap() error { return ErrPMI }

func (c *pmiClient) write(ctx context.Context, timeout time.Duration, b []byte) error {
	stop := c.deadline(ctx, timeout)
	defer stop()
	if _, err := c.conn.Write(b); err != nil {
		return fmt.Errorf("%w: writing a request: %v", ErrPMI, err)
	}
	return nil
}

func (c *pmiClient) read(ctx context.Context, timeout time.Duration) (pmiFields, error) {
	stop := c.deadline(ctx, timeout)
	defer stop()
	var f pmiFields
	var err error
	if c.framed {
		f, err = readPMI2(c.r)
	} else {
		f, err = readPMI1(c.r)
	}
	if err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() || ctx.Err() != nil {
			if d, ok := ctx.Deadline(); ok && time.Until(d) < timeout {
				return nil, fmt.Errorf("%w: waiting for a reply: %w", ErrPMI, context.DeadlineExceeded)
			}
			if ctx.Err() != nil {
				return nil, fmt.Errorf("%w: waiting for a reply: %w", ErrPMI, ctx.Err())
			}
			return nil, fmt.Errorf("%w: no reply from the PMI server within %v", ErrPMI, timeout)
		}
		return nil, err
	}
	return f, nil
}

// deadline bounds the next I/O by timeout and by ctx, and returns the
// function that lifts it.
func (c *pmiClient) deadline(ctx context.Context, timeout time.Duration) func() {
	return connDeadline(ctx, c.conn, timeout)
}

// KV over PMI. Values are escaped so that spaces, '=' and ';' survive both
// wire formats, and a value longer than the server's limit is split over
// several keys: key holds "n<parts>", key#0… the parts; a short value is
// stored as "v<value>".

// Put stores value under key.
func (c *pmiClient) Put(ctx context.Context, key, value string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.usable(key); err != nil {
		return err
	}
	enc := escapeValue(value)
	room := c.valMax - 1
	if len(enc) <= room {
		return c.put(ctx, key, "v"+enc)
	}
	var parts []string
	for len(enc) > 0 {
		n := min(room, len(enc))
		// Never split an escape sequence.
		if i := strings.LastIndexByte(enc[max(n-2, 0):n], '%'); i >= 0 {
			n = max(n-2, 0) + i
		}
		parts = append(parts, enc[:n])
		enc = enc[n:]
	}
	for i, p := range parts {
		if err := c.put(ctx, key+"#"+strconv.Itoa(i), "v"+p); err != nil {
			return err
		}
	}
	return c.put(ctx, key, "n"+strconv.Itoa(len(parts)))
}

func (c *pmiClient) put(ctx context.Context, key, value string) error {
	if len(key) > c.keyMax {
		return fmt.Errorf("%w: key %q is longer than the server's %d bytes", ErrLimit, key, c.keyMax)
	}
	var err error
	if c.version == 1 {
		_, err = c.call1(ctx, pmiReplyTimeout, "put_result", fmt.Sprintf("cmd=put kvsname=%s key=%s value=%s", c.kvsname, key, value))
	} else {
		_, err = c.call2(ctx, pmiReplyTimeout, "kvs-put-response", "kvs-put", "key", key, "value", value)
	}
	return err
}

// Get returns key's value, which some rank put before the last Fence.
func (c *pmiClient) Get(ctx context.Context, key string) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.usable(key); err != nil {
		return "", err
	}
	v, err := c.get(ctx, key)
	if err != nil {
		return "", err
	}
	switch {
	case strings.HasPrefix(v, "v"):
		return unescapeValue(v[1:])
	case strings.HasPrefix(v, "n"):
		n, err := strconv.Atoi(v[1:])
		if err != nil || n < 1 || n > maxPMIMessage {
			return "", fmt.Errorf("%w: key %q holds a bad part count %q", ErrPMI, key, v)
		}
		var b strings.Builder
		for i := 0; i < n; i++ {
			p, err := c.get(ctx, key+"#"+strconv.Itoa(i))
			if err != nil {
				return "", err
			}
			if !strings.HasPrefix(p, "v") {
				return "", fmt.Errorf("%w: part %d of key %q is malformed", ErrPMI, i, key)
			}
			b.WriteString(p[1:])
		}
		return unescapeValue(b.String())
	}
	return "", fmt.Errorf("%w: key %q holds %q, not a value commtune put", ErrPMI, key, clip(v))
}

// get reads one raw value. A missing key is an error naming it: Hydra
// answers rc=-1, Slurm rc=1, PMI-2 found=FALSE.
func (c *pmiClient) get(ctx context.Context, key string) (string, error) {
	var f pmiFields
	var err error
	if c.version == 1 {
		f, err = c.call1(ctx, pmiReplyTimeout, "get_result", fmt.Sprintf("cmd=get kvsname=%s key=%s", c.kvsname, key))
	} else {
		f, err = c.call2(ctx, pmiReplyTimeout, "kvs-get-response", "kvs-get", "jobid", c.kvsname, "srcid", "-1", "key", key)
		if err == nil && f["found"] != "TRUE" {
			err = &pmiError{req: "kvs-get " + key, rc: "0", msg: "not found"}
		}
	}
	if err != nil {
		if pe, ok := err.(*pmiError); ok {
			return "", fmt.Errorf("%w: key %q not in the key-value space (%s)", ErrPMI, key, strings.TrimSpace("rc="+pe.rc+" "+pe.msg))
		}
		return "", err
	}
	v, ok := f["value"]
	if !ok {
		return "", fmt.Errorf("%w: the reply to get %q has no value", ErrPMI, key)
	}
	return v, nil
}

// Fence is PMI's barrier: puts before it are visible after it.
func (c *pmiClient) Fence(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return ErrClosed
	}
	var err error
	if c.version == 1 {
		_, err = c.call1(ctx, pmiFenceTimeout, "barrier_out", "cmd=barrier_in")
		return err
	}
	if _, err = c.call2(ctx, pmiFenceTimeout, "kvs-fence-response", "kvs-fence"); err != nil {
		return err
	}
	// Hydra answers a PMI-2 fence at once and holds back a get until every
	// rank has fenced: a get of a key nobody puts makes the fence a
	// barrier there, and costs one round trip under Slurm, whose fence
	// already is one (it answers the get rc=1, Hydra found=FALSE).
	f, err := c.call2(ctx, pmiFenceTimeout, "kvs-get-response", "kvs-get", "jobid", c.kvsname, "srcid", "-1", "key", barrierKey)
	var pe *pmiError
	if errors.As(err, &pe) || err == nil && f["found"] != "TRUE" {
		return nil
	}
	if err == nil {
		return fmt.Errorf("%w: the barrier key %q holds a value", ErrPMI, barrierKey)
	}
	return err
}

// barrierKey is never put: getting it is how a PMI-2 fence waits for
// every rank.
const barrierKey = "commtune-barrier"

// Abort implements Aborter: it asks the process manager to end the job
// (PMI-1 "abort exitcode=N", PMI-2 "abort isworld=TRUE msg=…"). Neither
// has a reply; the caller exits next. Hydra's PMI-2 server does not know
// "abort" (it tears the job down at once with status 255, before this
// rank can exit with its code), so there nothing is sent: Hydra ends the
// job on the rank's non-zero exit, with its code.
func (c *pmiClient) Abort(ctx context.Context, code int, msg string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return ErrClosed
	}
	var line []byte
	switch {
	case c.version == 2 && !c.slurm:
		return nil
	case c.version == 1:
		line = []byte(fmt.Sprintf("cmd=abort exitcode=%d\n", code))
	default:
		// A newline would end the message early for some managers.
		msg = strings.NewReplacer("\n", " ", "\r", " ").Replace(cutText(msg))
		line = formatPMI2("abort", "isworld", "TRUE", "msg", msg)
	}
	return c.write(ctx, pmiReplyTimeout, line)
}

// Close finalizes: the launcher then knows this rank ended on purpose.
func (c *pmiClient) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	ctx := context.Background()
	var err error
	if c.version == 1 {
		_, err = c.call1(ctx, pmiReplyTimeout, "finalize_ack", "cmd=finalize")
	} else {
		_, err = c.call2(ctx, pmiReplyTimeout, "finalize-response", "finalize")
	}
	if cerr := c.conn.Close(); err == nil {
		err = cerr
	}
	return err
}

func (c *pmiClient) usable(key string) error {
	if c.closed {
		return ErrClosed
	}
	if key == "" || strings.ContainsAny(key, " =;#\n\t") {
		return fmt.Errorf("%w: key %q must be non-empty, without spaces, '=', ';' or '#'", ErrRefused, key)
	}
	return nil
}

// escapeValue percent-encodes every byte outside a set both wire formats
// carry unchanged.
func escapeValue(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("-_.,:/()[]+@", c) >= 0 {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", c)
	}
	return b.String()
}

func unescapeValue(s string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			b.WriteByte(s[i])
			continue
		}
		if i+2 >= len(s) {
			return "", fmt.Errorf("%w: value ends inside an escape", ErrPMI)
		}
		v, err := strconv.ParseUint(s[i+1:i+3], 16, 8)
		if err != nil {
			return "", fmt.Errorf("%w: bad escape %q in a value", ErrPMI, s[i:i+3])
		}
		b.WriteByte(byte(v))
		i += 2
	}
	return b.String(), nil
}
