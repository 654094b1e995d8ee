package commtune

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/commtune/commtune/internal/comm"
	"github.com/commtune/commtune/internal/core"
	"github.com/commtune/commtune/internal/driver/shm"
	"github.com/commtune/commtune/internal/job"
	"github.com/commtune/commtune/internal/profile"
)

// Thresholds the segment tests force on every transport, so that small
// messages cover all three protocols: below vecIovec bytes the payload is
// copied behind its header, up to vecEager it goes by reference, above it
// by rendezvous.
const (
	vecIovec = 256
	vecEager = 4096
)

// vecJob is a way to start an n-rank job in this process.
type vecJob struct {
	name string
	run  func(t *testing.T, n int, fn func(c *Comm) error) error
}

func vecJobs() []vecJob {
	jobs := []vecJob{{"goroutines", func(t *testing.T, n int, fn func(c *Comm) error) error {
		return Local(n, checkPath("inproc", profile.Rendezvous, fn), func(c *Config) { c.RendezvousThreshold, c.IovecThreshold = vecEager, vecIovec })
	}}}
	for _, m := range []string{"copy", "cma", "vmsplice", "cachefree"} {
		jobs = append(jobs, vecJob{"shm " + m, func(t *testing.T, n int, fn func(c *Comm) error) error {
			return localShm(t, n, checkPath("shm", profile.RendezvousVia(m), fn), func(c *Config) {
				c.Shm.Method, c.Shm.Eager, c.Shm.Iovec = m, vecEager, vecIovec
				c.Shm.Ring, c.Shm.Chunk = 64<<10, 8<<10 // large messages take many records
			})
		}})
	}
	return jobs
}

// checkPath wraps fn with a check that the job reaches the other ranks
// through transport and sends large messages by path, a profile curve (a
// pull only where single-copy reads are allowed: else the copy method).
func checkPath(transport, path string, fn func(c *Comm) error) func(c *Comm) error {
	return func(c *Comm) error {
		peer := (c.Rank() + 1) % c.Size()
		if got := c.in.Endpoint().Transport(peer); got != transport {
			return fmt.Errorf("rank %d reaches rank %d through %s, want %s", c.Rank(), peer, got, transport)
		}
		got := c.in.Endpoint().Eng.Policy(peer).Path(1<<20, transport, core.Contiguous)
		if path == profile.RendezvousVia("cma") && !c.in.Endpoint().Sched.CanPull(peer) {
			path = profile.RendezvousVia("copy")
		}
		if got != path {
			return fmt.Errorf("large messages go by %s, want %s", got, path)
		}
		return fn(c)
	}
}

// localShm is Local over the shared-memory transport: n ranks, goroutines
// of this process, each with its own segment and rings in a test
// directory, exactly as ranks in separate processes of one node.
func localShm(t *testing.T, n int, fn func(c *Comm) error, opts ...Option) error {
	t.Helper()
	cfg, err := buildConfig(opts)
	if err != nil {
		return err
	}
	cfg.DefaultSpin(n, runtime.GOMAXPROCS(0))
	dir := t.TempDir()
	local := make([]int, n)
	for i := range local {
		local[i] = i
	}
	eps := make([]*job.Endpoint, n)
	trs := make([]*shm.Transport, n)
	for r := range n {
		if eps[r], err = job.NewEndpoint(r, n, cfg); err != nil {
			return err
		}
		trs[r], err = shm.New(shm.Config{
			Rank: r, Job: "vec", Local: local, Handler: eps[r].Eng, Dir: dir,
			RingSize: cfg.Shm.Ring, ChunkSize: cfg.Shm.Chunk, NoCMA: cfg.Shm.NoCMA,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		})
		if err != nil {
			return err
		}
	}
	// Every rank connects before any finishes its rails: the rails'
	// capabilities need every peer's probe of this rank's memory.
	for _, tr := range trs {
		if err := tr.Connect(context.Background()); err != nil {
			return err
		}
	}
	comms := make([]*Comm, n)
	for r, tr := range trs {
		tr.Unlink()
		eps[r].AttachShm(tr, local)
		if err := eps[r].Ready(cfg); err != nil {
			return err
		}
		comms[r] = wrap(comm.NewWorld(eps[r], r, n))
	}
	var (
		mu    sync.Mutex
		first error
		wg    sync.WaitGroup
	)
	for r := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := runRank(fn, comms[r])
			if cerr := comms[r].Close(); err == nil {
				err = cerr
			}
			if err != nil {
				mu.Lock()
				if first == nil {
					first = fmt.Errorf("rank %d: %w", r, err)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return first
}

// vecGuard fills the gaps around carved segments: a byte written outside
// a segment, or a gap byte sent, shows.
const vecGuard = 0xA5

// vecArea is a message or receive area: one contiguous buffer, or
// segments carved from one backing array with a guard byte before,
// between and after them.
type vecArea struct {
	back []byte
	vec  bool
	segs [][]byte
	flat []byte
}

// vecLayout cuts n bytes into segment lengths (0: an empty segment); nil
// means one contiguous buffer, sent or received with the plain calls.
type vecLayout func(n int) []int

var (
	contiguous vecLayout
	oneSeg     = vecLayout(func(n int) []int { return []int{n} })
	thirds     = vecLayout(func(n int) []int { return []int{n / 3, n / 3, n - 2*(n/3)} })
	withEmpty  = vecLayout(func(n int) []int { return []int{0, n / 2, 0, 0, n - n/2, 0} })
	oddPieces  = vecLayout(func(n int) []int {
		var s []int
		for k := 1; n > 0; k += 10 {
			s = append(s, min(k, n))
			n -= min(k, n)
		}
		return s
	})
	// every8 cuts 8-byte segments: 2000 of them for 16000 bytes, more
	// than one writev or process_vm_readv takes.
	every8 = vecLayout(func(n int) []int {
		var s []int
		for ; n > 0; n -= min(8, n) {
			s = append(s, min(8, n))
		}
		return s
	})
	noSegs = vecLayout(func(int) []int { return []int{} })
)

func newVecArea(l vecLayout, n int) *vecArea {
	if l == nil {
		back := bytes.Repeat([]byte{vecGuard}, n+2)
		return &vecArea{back: back, flat: back[1 : 1+n]}
	}
	sizes := l(n)
	total := 0
	for _, k := range sizes {
		total += k
	}
	back := bytes.Repeat([]byte{vecGuard}, total+len(sizes)+1)
	a := &vecArea{back: back, vec: true, segs: [][]byte{}}
	pos := 1
	for _, k := range sizes {
		a.segs = append(a.segs, back[pos:pos+k:pos+k])
		pos += k + 1
	}
	return a
}

func (a *vecArea) fill(msg []byte) {
	if !a.vec {
		copy(a.flat, msg)
		return
	}
	for _, s := range a.segs {
		msg = msg[copy(s, msg):]
	}
}

func (a *vecArea) zero() {
	clear(a.flat)
	for _, s := range a.segs {
		clear(s)
	}
}

func (a *vecArea) bytes() []byte {
	if !a.vec {
		return slices.Clone(a.flat)
	}
	var b []byte
	for _, s := range a.segs {
		b = append(b, s...)
	}
	return b
}

// guardsIntact reports whether every byte outside the segments is still
// a guard.
func (a *vecArea) guardsIntact() bool {
	in := make([]bool, len(a.back))
	mark := func(s []byte) {
		if len(s) > 0 {
			off := int(uintptr(unsafe.Pointer(&s[0])) - uintptr(unsafe.Pointer(&a.back[0])))
			for i := range s {
				in[off+i] = true
			}
		}
	}
	mark(a.flat)
	for _, s := range a.segs {
		mark(s)
	}
	for i, b := range a.back {
		if !in[i] && b != vecGuard {
			return false
		}
	}
	return true
}

// send sends a's message to dest, blocking or not.
func (a *vecArea) send(ctx context.Context, c *Comm, dest, tag int, blocking bool) error {
	switch {
	case blocking && a.vec:
		return c.sendSegs(ctx, a.segs, dest, tag)
	case blocking:
		return c.Send(ctx, a.flat, dest, tag)
	}
	var q *Request
	var err error
	if a.vec {
		q, err = c.isendSegs(a.segs, dest, tag)
	} else {
		q, err = c.Isend(a.flat, dest, tag)
	}
	if err != nil {
		return err
	}
	_, err = q.Wait(ctx)
	return err
}

// recv receives a message from src into a, blocking or not.
func (a *vecArea) recv(ctx context.Context, c *Comm, src, tag int, blocking bool) (Status, error) {
	switch {
	case blocking && a.vec:
		return c.recvSegs(ctx, a.segs, src, tag)
	case blocking:
		return c.Recv(ctx, a.flat, src, tag)
	}
	var q *Request
	var err error
	if a.vec {
		q, err = c.irecvSegs(a.segs, src, tag)
	} else {
		q, err = c.Irecv(a.flat, src, tag)
	}
	if err != nil {
		return Status{}, err
	}
	return q.Wait(ctx)
}

func vecPattern(n, seed int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(seed*29 + i*7 + i>>9)
	}
	return b
}

// vecCase is one message from rank 0 to rank 1.
type vecCase struct {
	name      string
	size      int
	send      vecLayout
	recv      vecLayout
	room      int  // receive capacity; 0: the message's size
	anySource bool // the receive names AnySource
}

var vecCases = []vecCase{
	{"vector to contiguous, eager copy", 100, thirds, contiguous, 0, false},
	{"contiguous to vector, eager copy", 100, contiguous, thirds, 0, false},
	{"vector to vector, eager copy", 200, oddPieces, thirds, 0, false},
	{"200 one-byte segments each way", 200, func(n int) []int { return slices.Repeat([]int{1}, n) }, every8, 0, false},
	{"vector to contiguous, eager iovec", 1000, oddPieces, contiguous, 0, false},
	{"contiguous to vector, eager iovec", 1000, contiguous, oddPieces, 0, false},
	{"vector to vector, eager iovec", vecEager, withEmpty, oddPieces, 0, false},
	{"2000 one-byte segments, eager iovec", 2000, func(n int) []int { return slices.Repeat([]int{1}, n) }, oddPieces, 0, false},
	{"500 segments each way, eager iovec", 4000, every8, every8, 0, false},
	{"vector to contiguous, rendezvous", vecEager + 1, thirds, contiguous, 0, false},
	{"contiguous to vector, rendezvous", 50000, contiguous, oddPieces, 0, false},
	{"vector to vector, rendezvous", 50000, oddPieces, withEmpty, 0, false},
	{"2000 segments each way, rendezvous", 16000, every8, every8, 0, false},
	{"2000 segments to contiguous", 16000, every8, contiguous, 0, false},
	{"contiguous to 2000 segments", 16000, contiguous, every8, 0, false},
	{"far above rendezvous: vector to vector", 3<<20 + 5, thirds, oddPieces, 0, false},
	{"far above rendezvous: contiguous to vector", 3<<20 + 5, contiguous, thirds, 0, false},
	{"far above rendezvous: vector to contiguous", 3<<20 + 5, oneSeg, contiguous, 0, false},
	{"empty segments only", 0, func(int) []int { return []int{0, 0, 0} }, withEmpty, 0, false},
	{"no segments", 0, noSegs, noSegs, 0, false},
	{"zero bytes, vector to contiguous", 0, noSegs, contiguous, 0, false},
	{"truncated eager", 1000, thirds, oddPieces, 601, false},
	{"truncated rendezvous", 100000, oddPieces, withEmpty, 70001, false},
	{"truncated rendezvous, contiguous send", 100000, contiguous, thirds, 5000, false},
	{"truncated to nothing", 9000, thirds, noSegs, -1, false},
	{"any source, eager", 500, thirds, oddPieces, 0, true},
	{"any source, rendezvous", 30000, contiguous, withEmpty, 0, true},
}

// TestVecSendRecv sends every case from rank 0 to rank 1 over every way of
// running a job in this process, alternately blocking and not, and checks
// every byte, the status and the truncation rule. A vector send is never
// pulled; a contiguous one may be, into a vector receive.
func TestVecSendRecv(t *testing.T) {
	for _, job := range vecJobs() {
		t.Run(job.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			err := job.run(t, 2, func(c *Comm) error {
				for i, tc := range vecCases {
					if err := vecExchange(ctx, c, i, tc); err != nil {
						return fmt.Errorf("%s: %w", tc.name, err)
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

func vecExchange(ctx context.Context, c *Comm, i int, tc vecCase) error {
	msg := vecPattern(tc.size, i)
	blocking := i%2 == 0
	tag := 100 + i
	if c.Rank() == 0 {
		a := newVecArea(tc.send, tc.size)
		a.fill(msg)
		before := c.in.Endpoint().Eng.Stats()
		if err := a.send(ctx, c, 1, tag, blocking); err != nil {
			return err
		}
		after := c.in.Endpoint().Eng.Stats()
		if a.vec && after.PullSends != before.PullSends {
			return errors.New("a vector send was pulled")
		}
		if a.vec && after.VectorSends != before.VectorSends+1 {
			return errors.New("the vector send was not counted")
		}
		if !a.guardsIntact() || !bytes.Equal(a.bytes(), msg) {
			return errors.New("the send changed its memory")
		}
		return nil
	}
	room := tc.room
	switch {
	case room == 0:
		room = tc.size
	case room < 0:
		room = 0
	}
	a := newVecArea(tc.recv, room)
	a.zero()
	src := 0
	if tc.anySource {
		src = AnySource
	}
	st, err := a.recv(ctx, c, src, tag, blocking)
	if room < tc.size {
		var te *TruncateError
		if !errors.Is(err, ErrTruncate) || !errors.As(err, &te) || te.MessageLen != tc.size || te.BufferLen != room {
			return fmt.Errorf("receive of %d bytes into %d: %v, want a truncation", tc.size, room, err)
		}
	} else if err != nil {
		return err
	}
	if st.Source != 0 || st.Tag != tag || st.Count != room {
		return fmt.Errorf("status %+v, want source 0, tag %d, count %d", st, tag, room)
	}
	if got := a.bytes(); !bytes.Equal(got, msg[:room]) {
		at := 0
		for at < len(got) && got[at] == msg[at] {
			at++
		}
		return fmt.Errorf("received bytes differ from byte %d of %d", at, room)
	}
	if !a.guardsIntact() {
		return errors.New("bytes outside the receive segments changed")
	}
	return nil
}

// TestVecAnySourceMany: rank 0 receives, from any source into segments,
// vector and contiguous messages of every size class that ranks 1 and 2
// send at once; each sender's messages arrive in order and whole.
func TestVecAnySourceMany(t *testing.T) {
	sizes := []int{0, 50, 1000, vecEager, 20000, 300000}
	layouts := []vecLayout{thirds, contiguous, every8, withEmpty, oddPieces}
	for _, job := range vecJobs() {
		t.Run(job.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			err := job.run(t, 3, func(c *Comm) error {
				if c.Rank() != 0 {
					for i, n := range sizes {
						l := layouts[(i+c.Rank())%len(layouts)]
						if n == 0 {
							l = noSegs
						}
						a := newVecArea(l, n)
						a.fill(vecPattern(n, 10*c.Rank()+i))
						if err := a.send(ctx, c, 0, i, i%2 == 0); err != nil {
							return err
						}
					}
					return nil
				}
				next := map[int]int{1: 0, 2: 0}
				for k := 0; k < 2*len(sizes); k++ {
					a := newVecArea(layouts[k%len(layouts)], 300000)
					a.zero()
					st, err := a.recv(ctx, c, AnySource, AnyTag, k%3 == 0)
					if err != nil {
						return err
					}
					i := next[st.Source]
					if st.Tag != i || st.Count != sizes[i] {
						return fmt.Errorf("from %d: tag %d, %d bytes; want message %d of %d bytes", st.Source, st.Tag, st.Count, i, sizes[i])
					}
					if !bytes.Equal(a.bytes()[:st.Count], vecPattern(sizes[i], 10*st.Source+i)) || !a.guardsIntact() {
						return fmt.Errorf("from %d: message %d differs", st.Source, i)
					}
					next[st.Source]++
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestVecPulledIntoSegments: over shm with CMA, a large contiguous send is
// pulled straight into a receive's segments (one copy), while a large
// vector send is pushed.
func TestVecPulledIntoSegments(t *testing.T) {
	const size = 1<<20 + 3
	err := localShm(t, 2, func(c *Comm) error {
		ctx := context.Background()
		if c.in.Endpoint().Eng.Policy(1-c.Rank()).Path(size, "shm", core.Contiguous) != profile.RendezvousVia("cma") {
			return errSkipPull
		}
		msg := vecPattern(size, 1)
		if c.Rank() == 0 {
			if err := c.Send(ctx, msg, 1, 0); err != nil {
				return err
			}
			a := newVecArea(thirds, size)
			a.fill(msg)
			if err := c.sendSegs(ctx, a.segs, 1, 1); err != nil {
				return err
			}
			if s := c.in.Endpoint().Eng.Stats(); s.PullSends != 1 || s.RendezvousSends != 2 {
				return fmt.Errorf("%d pulled sends of %d rendezvous, want 1 of 2", s.PullSends, s.RendezvousSends)
			}
			return nil
		}
		for tag := range 2 {
			a := newVecArea(oddPieces, size)
			a.zero()
			if _, err := c.recvSegs(ctx, a.segs, 0, tag); err != nil {
				return err
			}
			if !bytes.Equal(a.bytes(), msg) || !a.guardsIntact() {
				return fmt.Errorf("message %d differs", tag)
			}
		}
		if p := c.in.Endpoint().Eng.Stats().PulledBytes; p != size {
			return fmt.Errorf("%d bytes pulled, want %d", p, size)
		}
		return nil
	}, func(c *Config) { c.Shm.Method = "cma" })
	if errors.Is(err, errSkipPull) {
		t.Skip("single-copy reads are not allowed here")
	}
	if err != nil {
		t.Fatal(err)
	}
}

var errSkipPull = errors.New("no pull between these ranks")

// TestVecArguments: the segment calls check communicator, rank and tag as
// Send and Recv do.
func TestVecArguments(t *testing.T) {
	err := Local(2, func(c *Comm) error {
		ctx := context.Background()
		segs := [][]byte{make([]byte, 2)}
		checks := []struct {
			name string
			err  error
		}{
			{"send to a rank outside", c.sendSegs(ctx, segs, 2, 0)},
			{"send with a negative tag", c.sendSegs(ctx, segs, 1, -1)},
			{"send with AnyTag", func() error { _, err := c.isendSegs(segs, 1, AnyTag); return err }()},
			{"receive from a rank outside", func() error { _, err := c.recvSegs(ctx, segs, 5, 0); return err }()},
			{"receive with a bad tag", func() error { _, err := c.irecvSegs(segs, 1, -7); return err }()},
		}
		for _, ch := range checks {
			if ch.err == nil {
				return fmt.Errorf("%s: no error", ch.name)
			}
		}
		var nilComm *Comm
		if err := nilComm.sendSegs(ctx, segs, 0, 0); err == nil {
			return errors.New("send on a nil communicator")
		}
		if _, err := nilComm.irecvSegs(segs, 0, 0); err == nil {
			return errors.New("receive on a nil communicator")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestVecCancel: an unmatched segment receive is withdrawn like any
// other, and a blocking one ends with its context.
func TestVecCancel(t *testing.T) {
	err := Local(2, func(c *Comm) error {
		segs := [][]byte{make([]byte, 4), make([]byte, 4)}
		q, err := c.irecvSegs(segs, 1-c.Rank(), 9)
		if err != nil {
			return err
		}
		if !q.Cancel() {
			return errors.New("cancel refused")
		}
		if _, err := q.Wait(context.Background()); !errors.Is(err, ErrCanceled) {
			return fmt.Errorf("cancelled receive: %v", err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		if _, err := c.recvSegs(ctx, segs, 1-c.Rank(), 9); !errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("receive past its deadline: %v", err)
		}
		return c.Barrier(context.Background())
	})
	if err != nil {
		t.Fatal(err)
	}
}

// The segmented calls of the communicator runtime (comm.Comm.SendSegs …),
// behind the public API's nil check, as an exported form would be.

func (c *Comm) sendSegs(ctx context.Context, segs [][]byte, dest, tag int) error {
	if err := c.check(); err != nil {
		return err
	}
	return c.in.SendSegs(ctx, segs, dest, tag)
}

func (c *Comm) recvSegs(ctx context.Context, segs [][]byte, src, tag int) (Status, error) {
	if err := c.check(); err != nil {
		return Status{}, err
	}
	return c.in.RecvSegs(ctx, segs, src, tag)
}

func (c *Comm) isendSegs(segs [][]byte, dest, tag int) (*Request, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	r, err := c.in.IsendSegs(segs, dest, tag)
	if err != nil {
		return nil, err
	}
	return &Request{r: r, c: c.in}, nil
}

func (c *Comm) irecvSegs(segs [][]byte, src, tag int) (*Request, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	r, err := c.in.IrecvSegs(segs, src, tag)
	if err != nil {
		return nil, err
	}
	return &Request{r: r, c: c.in}, nil
}
