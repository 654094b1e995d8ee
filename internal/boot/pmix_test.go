package boot

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// discoverPMIx runs discover for each rank at once against f, each with
// its variables changed by with, and returns the jobs; the test fails if
// any rank's does.
func discoverPMIx(t *testing.T, ctx context.Context, f *fakePMIx, with ...string) []*Job {
	t.Helper()
	jobs := make([]*Job, f.size)
	errs := make([]error, f.size)
	var wg sync.WaitGroup
	for r := range f.size {
		env := f.env(r, with...)
		wg.Add(1)
		go func() {
			defer wg.Done()
			jobs[r], errs[r] = discover(ctx, lookupMap(env))
		}()
	}
	wg.Wait()
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
	return jobs
}

// TestPMIxJob runs a job of 4 ranks on two nodes against the fake server
// in every encoding (picked by COMMTUNE_PMIX, by default, or by psquash),
// with an event before every reply: each rank must learn its place, the
// same secret, exchange per-rank keys (a value holding NUL too) across a
// fence, be refused another rank's key and a conflicting put, and
// finalize on Close.
func TestPMIxJob(t *testing.T) {
	for _, tc := range []struct {
		name   string
		with   []string
		bfrops string
	}{
		{"auto", nil, "v41"},
		{"v41", []string{EnvPMIxEncoding + "=v41"}, "v41"},
		{"v4", []string{EnvPMIxEncoding + "=V4"}, "v4"},
		{"v3", []string{EnvPMIxEncoding + "=v3"}, "v3"},
		{"psquash", []string{EnvPMIxPsquash + "=native"}, "v3"},
		{"v4 server", []string{"-PMIX_SERVER_URI41", EnvPMIxSecurity + "=munge,native"}, "v4"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testCtx(t)
			f := newFakePMIx(t, 4, []int{0, 1}, []int{2, 3})
			f.events = true
			jobs := discoverPMIx(t, ctx, f, tc.with...)
			errs := make([]error, len(jobs))
			var wg sync.WaitGroup
			for r, j := range jobs {
				wg.Add(1)
				go func() {
					defer wg.Done()
					errs[r] = exchangePMIx(ctx, j.KV, r, len(jobs))
				}()
			}
			wg.Wait()
			for r, err := range errs {
				if err != nil {
					t.Fatalf("rank %d: %v", r, err)
				}
			}
			for r, j := range jobs {
				node := []string{"pmix-node-0", "pmix-node-2"}[r/2]
				want := Job{Rank: r, Size: 4, LocalRank: r % 2, LocalSize: 2, ID: jobID(f.nspace), Secret: jobs[0].Secret,
					Node: node, KV: j.KV, Source: SourcePMIx, Protocol: "PMIx " + tc.bfrops}
				if !reflect.DeepEqual(*j, want) || len(j.Secret) != 32 {
					t.Errorf("rank %d: job %+v\nwant %+v", r, *j, want)
				}
				if err := j.Close(); err != nil {
					t.Errorf("rank %d: Close: %v", r, err)
				}
				if err := j.KV.Close(); err != nil {
					t.Errorf("rank %d: a second Close: %v", r, err)
				}
				for what, err := range map[string]error{
					"Put":   j.KV.Put(ctx, fmt.Sprintf("late/%d", r), "x"),
					"Fence": j.KV.Fence(ctx),
					"Get":   func() error { _, err := j.KV.Get(ctx, "addr/0"); return err }(),
				} {
					if !errors.Is(err, ErrClosed) {
						t.Errorf("rank %d: %s after Close: %v, want ErrClosed", r, what, err)
					}
				}
			}
			f.mu.Lock()
			defer f.mu.Unlock()
			for r := range uint32(4) {
				h := f.hellos[r]
				if h.bfrops != tc.bfrops || h.version != pmixVersion || h.nspace != f.nspace || h.uid != uint32(os.Geteuid()) || !f.finalized[r] {
					t.Errorf("rank %d: connected with %+v, finalized %v", r, h, f.finalized[r])
				}
			}
			if _, ok := f.committed[0][secretKey]; !ok || len(f.committed[1]) != 2 {
				t.Errorf("committed %v", f.committed)
			}
		})
	}
}

// exchangePMIx is one rank's part of TestPMIxJob.
func exchangePMIx(ctx context.Context, kv KV, rank, size int) error {
	if err := kv.Put(ctx, fmt.Sprintf("addr/%d", rank), fmt.Sprintf("10.0.0.%d:%d", rank, 4000+rank)); err != nil {
		return err
	}
	if err := kv.Put(ctx, fmt.Sprintf("bin/%d", rank), fmt.Sprintf("a\x00b;%d", rank)); err != nil {
		return err
	}
	if err := kv.Put(ctx, fmt.Sprintf("addr/%d", rank), fmt.Sprintf("10.0.0.%d:%d", rank, 4000+rank)); err != nil {
		return fmt.Errorf("putting the same value again: %w", err)
	}
	if err := kv.Put(ctx, fmt.Sprintf("addr/%d", rank), "elsewhere"); !errors.Is(err, ErrConflict) {
		return fmt.Errorf("a conflicting put: %v, want ErrConflict", err)
	}
	other := (rank + 1) % size
	if err := kv.Put(ctx, fmt.Sprintf("addr/%d", other), "mine"); !errors.Is(err, ErrRefused) {
		return fmt.Errorf("a put of rank %d's key: %v, want ErrRefused", other, err)
	}
	for _, key := range []string{"", "pmix.mine", "a\x00b", strings.Repeat("k", 512)} {
		if err := kv.Put(ctx, key, "v"); !errors.Is(err, ErrRefused) {
			return fmt.Errorf("a put of key %q: %v, want ErrRefused", key, err)
		}
	}
	if err := kv.Fence(ctx); err != nil {
		return err
	}
	var keys, want []string
	for p := range size {
		keys = append(keys, fmt.Sprintf("addr/%d", p), fmt.Sprintf("bin/%d", p))
		want = append(want, fmt.Sprintf("10.0.0.%d:%d", p, 4000+p), fmt.Sprintf("a\x00b;%d", p))
	}
	got, err := GetAll(ctx, kv, keys)
	if err != nil {
		return err
	}
	if !reflect.DeepEqual(got, want) {
		return fmt.Errorf("got %q, want %q", got, want)
	}
	if v, err := kv.Get(ctx, fmt.Sprintf("addr/%d", other)); err != nil || v != want[2*other] {
		return fmt.Errorf("get of addr/%d: %q, %v", other, v, err)
	}
	if _, err := kv.Get(ctx, "never/1"); !errors.Is(err, ErrPMIx) || !strings.Contains(err.Error(), "not found") {
		return fmt.Errorf("get of a key never put: %v, want not found", err)
	}
	return kv.Fence(ctx) // nobody closes while another still gets
}

// TestPMIxAskShape: job data with a value the client cannot decode before
// the size and the node arrays makes it ask for both (GETNB of the
// wildcard rank); the first such get is answered "timeout" and retried.
func TestPMIxAskShape(t *testing.T) {
	for _, bfrops := range []string{"v41", "v3"} {
		t.Run(bfrops, func(t *testing.T) {
			ctx := testCtx(t)
			f := newFakePMIx(t, 3, []int{0, 2}, []int{1})
			f.unknownFirst = true
			f.getTimeouts = 1
			jobs := discoverPMIx(t, ctx, f, EnvPMIxEncoding+"="+bfrops)
			for r, j := range jobs {
				if j.Size != 3 || j.LocalSize != 2-r%2 || j.LocalRank != r/2 || j.Node != []string{"pmix-node-0", "pmix-node-1", "pmix-node-0"}[r] {
					t.Errorf("rank %d: %+v", r, *j)
				}
				if !bytes.Equal(j.Secret, jobs[0].Secret) {
					t.Errorf("rank %d: another secret", r)
				}
				if err := j.Close(); err != nil {
					t.Error(err)
				}
			}
			f.mu.Lock()
			defer f.mu.Unlock()
			if f.gets["pmix.job.size"] != 4 || f.gets["pmix.lpeers"] != 3 {
				t.Errorf("gets %v; want pmix.job.size 3 times and once more after the timeout, pmix.lpeers 3 times", f.gets)
			}
		})
	}
}

// TestPMIxGetRetry: a GETNB the server answers "timeout" (a rank of its
// node had not committed yet) is asked again, alone or among others.
func TestPMIxGetRetry(t *testing.T) {
	ctx := testCtx(t)
	f := newFakePMIx(t, 2)
	jobs := discoverPMIx(t, ctx, f)
	for r, j := range jobs {
		if err := j.KV.Put(ctx, fmt.Sprintf("addr/%d", r), fmt.Sprint("at-", r)); err != nil {
			t.Fatal(err)
		}
	}
	fenceAll(t, ctx, jobs)
	timeoutOnce := func() {
		f.mu.Lock()
		f.getTimeouts = 1
		f.mu.Unlock()
	}
	timeoutOnce()
	if v, err := jobs[1].KV.Get(ctx, "addr/0"); err != nil || v != "at-0" {
		t.Fatalf("get after a timeout: %q, %v", v, err)
	}
	timeoutOnce()
	if v, err := GetAll(ctx, jobs[0].KV, []string{"addr/1", "addr/0"}); err != nil || !reflect.DeepEqual(v, []string{"at-1", "at-0"}) {
		t.Fatalf("GetAll after a timeout: %q, %v", v, err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.gets["addr/0"] != 2 || f.gets["addr/1"] != 2 {
		t.Fatalf("gets %v, want each key twice", f.gets)
	}
}

// fenceAll fences every job's KV at once.
func fenceAll(t *testing.T, ctx context.Context, jobs []*Job) {
	t.Helper()
	errs := make(chan error, len(jobs))
	for _, j := range jobs {
		go func() { errs <- j.KV.Fence(ctx) }()
	}
	for range jobs {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

// TestPMIxAbortDuringFence: an Abort goes out and is answered while the
// same rank's fence waits for another, then waits out its context (the
// server would be ending the process); cancelling the fence's context
// ends it at once, and the server's late answer to it does not confuse
// the fences after.
func TestPMIxAbortDuringFence(t *testing.T) {
	ctx := testCtx(t)
	f := newFakePMIx(t, 2)
	jobs := discoverPMIx(t, ctx, f)
	arrived := make(chan uint32, 4)
	f.mu.Lock()
	f.fenceArrived = arrived
	f.mu.Unlock()
	fctx, cancel := context.WithCancel(ctx)
	fenced := make(chan error, 1)
	go func() { fenced <- jobs[0].KV.Fence(fctx) }()
	if r := <-arrived; r != 0 {
		t.Fatalf("rank %d fenced", r)
	}
	// Answered, Abort waits for the server to end the process, until its
	// context ends.
	actx, acancel := context.WithTimeout(ctx, 100*time.Millisecond)
	err := jobs[0].KV.(Aborter).Abort(actx, 7, "it broke\x00badly")
	acancel()
	if err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	aborts := f.aborts
	f.mu.Unlock()
	if want := []fakeAbort{{0, 7, "it broke badly"}}; !reflect.DeepEqual(aborts, want) {
		t.Fatalf("aborts %+v, want %+v", aborts, want)
	}
	cancel()
	if err := <-fenced; !errors.Is(err, context.Canceled) || !errors.Is(err, ErrPMIx) {
		t.Fatalf("cancelled fence: %v", err)
	}
	// Rank 1 completes the fence rank 0 left; the reply to rank 0's
	// forgotten tag is dropped, then both fence again.
	if err := jobs[1].KV.Fence(ctx); err != nil {
		t.Fatal(err)
	}
	<-arrived
	fenceAll(t, ctx, jobs)
	for _, j := range jobs {
		if err := j.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestPMIxCloseDuringFence: Close while a fence waits finalizes, and the
// fence ends with ErrClosed.
func TestPMIxCloseDuringFence(t *testing.T) {
	ctx := testCtx(t)
	f := newFakePMIx(t, 2)
	jobs := discoverPMIx(t, ctx, f)
	arrived := make(chan uint32, 1)
	f.mu.Lock()
	f.fenceArrived = arrived
	f.mu.Unlock()
	fenced := make(chan error, 1)
	go func() { fenced <- jobs[0].KV.Fence(ctx) }()
	<-arrived
	if err := jobs[0].Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-fenced; !errors.Is(err, ErrClosed) {
		t.Fatalf("fence cut by Close: %v, want ErrClosed", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.finalized[0] {
		t.Fatal("Close sent no finalize")
	}
}

// TestPMIxServerLost: a server that closes the connection while a fence
// waits makes the fence fail with ErrPMIx at once (not at its deadline),
// and so does every later request; Close still returns.
func TestPMIxServerLost(t *testing.T) {
	ctx := testCtx(t)
	f := newFakePMIx(t, 1)
	f.closeAtFence = 2 // the first is the secret's
	j := discoverPMIx(t, ctx, f)[0]
	if err := j.KV.Put(ctx, "addr/0", "x"); err != nil {
		t.Fatal(err)
	}
	err := j.KV.Fence(ctx)
	if !errors.Is(err, ErrPMIx) || errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "closed the connection") {
		t.Fatalf("fence on a lost connection: %v", err)
	}
	if _, err := j.KV.Get(ctx, "never-put"); !errors.Is(err, ErrPMIx) {
		t.Fatalf("get on a lost connection: %v", err)
	}
	if err := j.KV.Fence(ctx); !errors.Is(err, ErrPMIx) {
		t.Fatalf("fence on a lost connection: %v", err)
	}
	if err := j.Close(); err == nil {
		t.Fatal("Close on a lost connection reported a finalize")
	}
}

// TestPMIxHandshake: the server's refusals, as each OpenPMIx version
// words them, and a server whose job is smaller than the rank.
func TestPMIxHandshake(t *testing.T) {
	for _, tc := range []struct {
		name   string
		refuse int32
		nodes  [][]int
		with   []string
		want   string
	}{
		{"refused with a status", -12, nil, nil, "the server refused the connection: status -12 (invalid credential)"},
		{"unknown namespace", 0, nil, []string{EnvPMIxNamespace + "=other"}, `closed the connection during the handshake: it refused namespace "other" rank 0, the v41 encoding`},
		{"rank past the job", 0, [][]int{{0, 1, 5}}, []string{EnvPMIxRank + "=5"}, "PMIX_RANK=5 but the job has 2 ranks"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakePMIx(t, 2, tc.nodes...)
			f.refuse = tc.refuse
			_, err := discover(testCtx(t), lookupMap(f.env(0, tc.with...)))
			if !errors.Is(err, ErrPMIx) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}

// TestPMIxSilentServer: a server that takes the connection request and
// never answers is an error as soon as the caller's context ends.
func TestPMIxSilentServer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	asked := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			close(asked)
			return
		}
		var hdr [pmixHeaderLen]byte
		io.ReadFull(c, hdr[:])
		io.ReadFull(c, make([]byte, binary.NativeEndian.Uint32(hdr[8:])))
		asked <- c
	}()
	ctx, cancel := context.WithCancel(testCtx(t))
	uri := "ns.0;tcp4://" + ln.Addr().String()
	errc := make(chan error, 1)
	go func() {
		_, err := discover(ctx, lookupMap(map[string]string{EnvPMIxNamespace: "ns", EnvPMIxRank: "0", "PMIX_SERVER_URI41": uri}))
		errc <- err
	}()
	if c, ok := <-asked; ok {
		defer c.Close()
	}
	cancel()
	if err := <-errc; !errors.Is(err, ErrPMIx) || !strings.Contains(err.Error(), "reading the connection reply") {
		t.Fatalf("error %v", err)
	}
}

// TestPMIxEnvironment: what a launcher's variables make of a start that
// cannot work, before any connection: clear errors that wrap ErrPMIx.
func TestPMIxEnvironment(t *testing.T) {
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadURI := "ns.0;tcp4://" + dead.Addr().String()
	dead.Close()
	const uri = "ns.0;tcp4://127.0.0.1:1"
	base := func(with ...string) map[string]string {
		env := map[string]string{EnvPMIxNamespace: "ns", EnvPMIxRank: "0", "PMIX_SERVER_URI41": uri}
		editEnv(env, with...)
		return env
	}
	for _, tc := range []struct {
		name string
		env  map[string]string
		want string
	}{
		{"bad rank", base(EnvPMIxRank + "=x"), `PMIX_RANK="x" is not a rank`},
		{"negative rank", base(EnvPMIxRank + "=-1"), `PMIX_RANK="-1" is not a rank`},
		{"huge rank", base(EnvPMIxRank + "=1048576"), `PMIX_RANK="1048576" is not a rank`},
		{"rank without namespace", base("-" + EnvPMIxNamespace), `PMIX_NAMESPACE="" is not a namespace`},
		{"namespace without rank", base("-" + EnvPMIxRank), `PMIX_RANK="" is not a rank`},
		{"long namespace", base(EnvPMIxNamespace + "=" + strings.Repeat("n", 256)), "is not a namespace"},
		{"no uri", base("-PMIX_SERVER_URI41"), "PMIX_NAMESPACE is set but no PMIX_SERVER_URI41, _URI4 or _URI3"},
		{"only the v2 wire", base("-PMIX_SERVER_URI41", "PMIX_SERVER_URI21="+uri), "offers only the v2 wire (PMIX_SERVER_URI21)"},
		{"bogus encoding", base(EnvPMIxEncoding + "=V5"), `COMMTUNE_PMIX="V5": want v41, v4, v3 or auto`},
		{"munge only", base(EnvPMIxSecurity + "=munge"), "PMIX_SECURITY_MODE=munge: the server takes no native credential"},
		{"v3 without its uri", base(EnvPMIxEncoding + "=v3"), "COMMTUNE_PMIX=v3 but the server sets no PMIX_SERVER_URI3"},
		{"usock", base("PMIX_SERVER_URI41=ns.0;usock:///tmp/pmix"), "not a tcp address"},
		{"no separator", base("PMIX_SERVER_URI41=tcp4://127.0.0.1:5"), "want <nspace>.<rank>;tcp4://HOST:PORT"},
		{"bad port", base("PMIX_SERVER_URI41=ns.0;tcp4://127.0.0.1:0"), "bad port"},
		{"no port", base("PMIX_SERVER_URI41=ns.0;tcp4://127.0.0.1"), "missing port"},
		{"nobody listening", base("PMIX_SERVER_URI41=" + deadURI), "connecting to PMIX_SERVER_URI41=127.0.0.1:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := discover(testCtx(t), lookupMap(tc.env))
			if !errors.Is(err, ErrPMIx) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want ErrPMIx and %q", err, tc.want)
			}
		})
	}
}

// TestPMIxServerChoice: which variable, hence which encoding, a client
// reads from what the server exports and what the site or user chose.
func TestPMIxServerChoice(t *testing.T) {
	uris := []string{"PMIX_SERVER_URI41=a.0;tcp4://127.0.0.1:41", "PMIX_SERVER_URI4=a.0;tcp4://127.0.0.1:4", "PMIX_SERVER_URI3=a.0;tcp4://127.0.0.1:3"}
	all := func(extra ...string) []string { return append(slices.Clone(uris), extra...) }
	for _, tc := range []struct {
		name string
		env  []string
		want string // variable, address, bfrops, encoding
	}{
		{"newest", all(), "PMIX_SERVER_URI41 127.0.0.1:41 v41 2"},
		{"auto", all(EnvPMIxEncoding + "= Auto "), "PMIX_SERVER_URI41 127.0.0.1:41 v41 2"},
		{"v4 server", uris[1:], "PMIX_SERVER_URI4 127.0.0.1:4 v4 2"},
		{"v3 server", uris[2:], "PMIX_SERVER_URI3 127.0.0.1:3 v3 1"},
		{"psquash", all(EnvPMIxPsquash + "=native"), "PMIX_SERVER_URI3 127.0.0.1:3 v3 1"},
		{"psquash without v3", append(slices.Clone(uris[:2]), EnvPMIxPsquash+"=native"), "PMIX_SERVER_URI41 127.0.0.1:41 v41 2"},
		{"forced v4", all(EnvPMIxEncoding + "=v4"), "PMIX_SERVER_URI4 127.0.0.1:4 v4 2"},
		{"forced v3", all(EnvPMIxEncoding + "= V3 "), "PMIX_SERVER_URI3 127.0.0.1:3 v3 1"},
		{"tcp6", []string{"PMIX_SERVER_URI41=a.0;tcp6://[::1]:7"}, "PMIX_SERVER_URI41 [::1]:7 v41 2"},
		{"dotted namespace", []string{"PMIX_SERVER_URI41=prterun-x-1@0.0;tcp4://10.1.2.3:9"}, "PMIX_SERVER_URI41 10.1.2.3:9 v41 2"},
	} {
		ep, err := pmixServer(mapEnv(tc.env))
		got := fmt.Sprintf("%s %s %s %d", ep.variable, ep.addr, ep.bfrops, ep.enc)
		if err != nil {
			got = err.Error()
		}
		if got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}

// TestPMIxKeyOwner: a key ending in "/N" is rank N's, any other rank 0's.
func TestPMIxKeyOwner(t *testing.T) {
	for key, want := range map[string]int{
		"addr/3": 3, "tcp/12": 12, "a/b/7": 7, "commtune-secret": 0, "x/": 0, "x/-1": 0, "x/1a": 0,
		"x/99999999999999999999": 0, "/5": 5, "x/+2": 2,
	} {
		if got := keyOwner(key); got != want {
			t.Errorf("keyOwner(%q) = %d, want %d", key, got, want)
		}
	}
}

// TestPMIxPlaceLocal: the local rank, size and node from a node's ranks.
func TestPMIxPlaceLocal(t *testing.T) {
	for _, tc := range []struct {
		lpeers     string
		rank, size int
		want       string
	}{
		{"0,1", 1, 2, "local 1 of 2 on pmix-node-0"},
		{"5, 2,7", 7, 8, "local 2 of 3 on pmix-node-2"},
		{"3", 3, 4, "local 0 of 1 on pmix-node-3"},
		{"0,1", 2, 4, "rank 2 is not among its node's ranks [0 1]"},
		{"0,4", 0, 4, "name one past the job's 4"},
		{"0,x", 0, 4, `"0,x" is not a list of ranks`},
		{"", 0, 4, `"" is not a list of ranks`},
		{"0,-1", 0, 4, "is not a list of ranks"},
	} {
		j := &Job{Rank: tc.rank, Size: tc.size}
		peers, err := parseRankList(tc.lpeers)
		if err == nil {
			err = placeLocal(j, peers)
		}
		got := fmt.Sprintf("local %d of %d on %s", j.LocalRank, j.LocalSize, j.Node)
		if err != nil {
			got = err.Error()
			if !errors.Is(err, ErrPMIx) {
				t.Errorf("%q: %v does not wrap ErrPMIx", tc.lpeers, err)
			}
		}
		if !strings.Contains(got, tc.want) {
			t.Errorf("rank %d in %q: %s, want %s", tc.rank, tc.lpeers, got, tc.want)
		}
	}
}

// nestedInfo returns a value that is an info holding an info … depth
// deep, the innermost holding a string.
func nestedInfo(enc pmixEncoding, depth int) []byte {
	w := &pmixWriter{enc: enc}
	for range depth {
		w.u16(pmixInfo)
		w.str("k")
		w.u32(0)
	}
	w.u16(pmixString)
	w.str("leaf")
	return w.b
}

// nestedArray returns a value that is an array holding an array … depth
// deep, the innermost holding one string.
func nestedArray(enc pmixEncoding, depth int) []byte {
	w := &pmixWriter{enc: enc}
	w.u16(pmixDataArray)
	for range depth - 1 {
		w.u16(pmixDataArray)
		w.size(1)
	}
	w.u16(pmixString)
	w.size(1)
	w.str("leaf")
	return w.b
}

// TestPMIxValueNesting: values nest (arrays of info in the job data) but
// not without end: a value nested deeper than the decoder allows is an
// error, whatever the nesting type. Nesting is recursion in the decoder;
// one unbounded kind lets a single reply (about 3 bytes a level, within
// the 64 MiB a message may have) overflow the goroutine's stack, a
// fatal error no recover catches.
func TestPMIxValueNesting(t *testing.T) {
	for _, enc := range []pmixEncoding{pmixV4, pmixV3} {
		for _, tc := range []struct {
			name  string
			value []byte
			ok    bool
		}{
			{"info in info", nestedInfo(enc, 2), true},
			{"arrays 3 deep", nestedArray(enc, 3), true},
			{"arrays 1000 deep", nestedArray(enc, 1000), false},
			{"info 1000 deep", nestedInfo(enc, 1000), false},
		} {
			r := &pmixReader{b: tc.value, enc: enc}
			v := r.value("v", 0)
			if ok := r.err == nil; ok != tc.ok {
				t.Errorf("encoding %d, %s: decoded %v, error %v", enc, tc.name, ok, r.err)
			} else if !ok && !errors.Is(r.err, ErrPMIx) {
				t.Errorf("encoding %d, %s: %v does not wrap ErrPMIx", enc, tc.name, r.err)
			} else if ok && !strings.Contains(fmt.Sprint(v), "leaf") {
				t.Errorf("encoding %d, %s: %v", enc, tc.name, v)
			}
		}
	}
}
