package commtune_test

import (
	"context"
	"fmt"
	"maps"
	"runtime/pprof"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/commtune/commtune"
	"github.com/commtune/commtune/internal/trace"
)

// profileProgram is what each rank of the Profile and timeline tests
// does: 5 Allreduces, a ring of Sends and Recvs, and an Isend/Irecv pair
// completed by Wait.
func profileProgram(ctx context.Context, c *commtune.Comm) error {
	in, out := []float64{1}, []float64{0}
	for range 5 {
		if err := commtune.Allreduce(ctx, c, in, out, commtune.Sum); err != nil {
			return err
		}
	}
	n, me := c.Size(), c.Rank()
	next, prev := (me+1)%n, (me+n-1)%n
	buf := make([]byte, 100)
	if me%2 == 0 {
		if err := c.Send(ctx, buf, next, 1); err != nil {
			return err
		}
		if _, err := c.Recv(ctx, buf, prev, 1); err != nil {
			return err
		}
	} else {
		if _, err := c.Recv(ctx, buf, prev, 1); err != nil {
			return err
		}
		if err := c.Send(ctx, buf, next, 1); err != nil {
			return err
		}
	}
	rbuf := make([]byte, 40)
	rq, err := c.Irecv(rbuf, prev, 2)
	if err != nil {
		return err
	}
	sq, err := c.Isend(buf[:40], next, 2)
	if err != nil {
		return err
	}
	if _, err := sq.Wait(ctx); err != nil {
		return err
	}
	_, err = rq.Wait(ctx)
	return err
}

func TestProfile(t *testing.T) {
	const n = 4 // even: the ring's Sends pair with Recvs
	tests := []struct {
		name, counters string
		want           map[string]int64 // calls per operation; nil: an empty Profile
	}{
		{"default", "", map[string]int64{"Allreduce": 5, "Send": 1, "Recv": 1, "Isend": 1, "Irecv": 1, "Wait": 2}},
		{"off", "off", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(commtune.EnvCounters, tc.counters)
			profiles := make([]commtune.Profile, n)
			err := commtune.Local(n, func(c *commtune.Comm) error {
				if err := profileProgram(context.Background(), c); err != nil {
					return err
				}
				profiles[c.Rank()] = c.Profile()
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			for r, p := range profiles {
				if tc.want == nil {
					if len(p.Ops) != 0 || len(p.Peers) != 0 {
						t.Fatalf("rank %d: counters off, Profile %+v", r, p)
					}
					continue
				}
				got := map[string]int64{}
				for _, o := range p.Ops {
					got[o.Op] = o.Calls
					if o.Time <= 0 {
						t.Errorf("rank %d %s: time %v", r, o.Op, o.Time)
					}
					if o.Op == "Allreduce" && (o.Bytes != 5*8 || len(o.Paths) == 0 || o.Paths[0].Algorithm == "" || o.Paths[0].By == "") {
						t.Errorf("rank %d Allreduce: %+v", r, o)
					}
				}
				if !mapsEqual(got, tc.want) {
					t.Fatalf("rank %d: calls %v, want %v", r, got, tc.want)
				}
				next, prev := (r+1)%n, (r+n-1)%n
				want := []commtune.PeerProfile{
					{Rank: next, Sends: 2, SentBytes: 140},
					{Rank: prev, Receives: 2, ReceivedBytes: 140},
				}
				slices.SortFunc(want, func(a, b commtune.PeerProfile) int { return a.Rank - b.Rank })
				if !slices.Equal(p.Peers, want) {
					t.Fatalf("rank %d: peers %+v, want %+v", r, p.Peers, want)
				}
			}
		})
	}
}

// TestTimelineLocal: goroutine ranks under COMMTUNE_TRACE each write a
// file the format's checks accept, with a span per call in the order the
// rank made them, on one clock.
func TestTimelineLocal(t *testing.T) {
	const n = 4
	dir := t.TempDir()
	t.Setenv(commtune.EnvTrace, dir)
	if err := commtune.Local(n, func(c *commtune.Comm) error { return profileProgram(context.Background(), c) }); err != nil {
		t.Fatal(err)
	}
	job, err := trace.ReadChecked(dir, n)
	if err != nil {
		t.Fatal(err)
	}
	for r, spans := range job.Spans {
		var names []string
		for _, s := range spans {
			names = append(names, s.Name)
			if s.Site == "" || s.Comm != "world" {
				t.Errorf("rank %d %s: site %q comm %q", r, s.Name, s.Site, s.Comm)
			}
		}
		first := []string{"Allreduce", "Allreduce", "Allreduce", "Allreduce", "Allreduce"}
		if len(names) != 11 || !slices.Equal(names[:5], first) || names[7] != "Irecv" || names[8] != "Isend" {
			t.Fatalf("rank %d: spans %v", r, names)
		}
		if off := job.Ranks[r].ClockOffsetNs; off != 0 && (off > 10_000 || off < -10_000) {
			t.Errorf("rank %d: goroutine ranks read one clock, yet offset %d ns", r, off)
		}
	}
}

func mapsEqual(a, b map[string]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestPprofLabels: with COMMTUNE_PPROF_LABELS=on a rank blocked in Recv
// carries the labels commtune=Recv and rank=1 in the goroutine profile,
// and loses them once the call returns; without it, it carries none.
func TestPprofLabels(t *testing.T) {
	for _, tc := range []struct {
		setting string
		want    bool
	}{{"on", true}, {"", false}} {
		t.Run("labels="+tc.setting, func(t *testing.T) {
			t.Setenv(commtune.EnvPprofLabels, tc.setting)
			var during, after string
			err := commtune.Local(2, func(c *commtune.Comm) error {
				ctx := context.Background()
				buf := make([]byte, 8)
				if c.Rank() == 1 {
					if _, err := c.Recv(ctx, buf, 0, 9); err != nil {
						return err
					}
					after = goroutineProfile(t)
					return nil
				}
				// Until rank 1 waits in Recv: in the engine's wait, past
				// the call's start (where the labels are set).
				for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(time.Millisecond) {
					during = goroutineProfile(t)
					if strings.Contains(during, "commtune.(*Comm).Recv") && strings.Contains(during, "internal/core.(*Request).") {
						break
					}
				}
				return c.Send(ctx, buf, 1, 9)
			})
			if err != nil {
				t.Fatal(err)
			}
			label := `"commtune":"Recv", "rank":"1"`
			if got := strings.Contains(during, label); got != tc.want {
				t.Fatalf("labels %s on a rank inside Recv: %v, want %v; profile:\n%s", label, got, tc.want, during)
			}
			if strings.Contains(after, `"commtune":"Recv"`) {
				t.Fatalf("the Recv's labels stayed after it returned; profile:\n%s", after)
			}
		})
	}
}

// goroutineProfile is the goroutine profile's text, labels included.
func goroutineProfile(t *testing.T) string {
	var b strings.Builder
	if err := pprof.Lookup("goroutine").WriteTo(&b, 1); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// oneSidedAndPersistent is what each of 2 ranks does in
// TestProfileOneSidedAndPersistent: a window's fence and lock epochs with
// a Put and a Get, then a persistent send or receive and a persistent
// Allreduce, started together and waited for three times.
func oneSidedAndPersistent(ctx context.Context, c *commtune.Comm) error {
	win, err := commtune.AllocWindow[float64](ctx, c, 8)
	if err != nil {
		return err
	}
	other := 1 - c.Rank()
	if err := win.Fence(ctx); err != nil {
		return err
	}
	if err := win.Put(ctx, make([]float64, 3), other, 0); err != nil {
		return err
	}
	if err := win.Fence(ctx); err != nil {
		return err
	}
	if err := win.Lock(ctx, commtune.LockShared, other); err != nil {
		return err
	}
	if err := win.Get(ctx, make([]float64, 2), other, 0); err != nil {
		return err
	}
	if err := win.Unlock(ctx, other); err != nil {
		return err
	}
	if err := win.Free(ctx); err != nil {
		return err
	}
	buf := make([]byte, 24)
	var p *commtune.Prequest
	if c.Rank() == 0 {
		p, err = c.SendInit(buf, 1, 5)
	} else {
		p, err = c.RecvInit(buf, 0, 5)
	}
	if err != nil {
		return err
	}
	ar, err := commtune.AllreduceInit(c, []float64{1}, make([]float64, 1), commtune.Sum)
	if err != nil {
		return err
	}
	for range 3 {
		if err := commtune.StartAll(p, ar); err != nil {
			return err
		}
		if _, err := p.Wait(ctx); err != nil {
			return err
		}
		if _, err := ar.Wait(ctx); err != nil {
			return err
		}
	}
	return nil
}

// TestProfileOneSidedAndPersistent: a window's calls and persistent
// requests' starts and waits are counted, with their bytes; a persistent
// send counts at its peer as a send from Start, a persistent receive as a
// receive at its Wait, and one-sided calls not as point-to-point traffic.
func TestProfileOneSidedAndPersistent(t *testing.T) {
	const n = 2
	ctx := context.Background()
	profiles := profilesOf(t, n, func(c *commtune.Comm) (*commtune.Comm, error) { return c, oneSidedAndPersistent(ctx, c) })
	type line struct{ calls, bytes int64 }
	for r, p := range profiles {
		got := map[string]line{}
		for op, o := range opsOf(p) {
			got[op] = line{o.Calls, o.Bytes}
		}
		persistent := line{3, 72} // the sender's at Start, the receiver's at Wait
		start, wait := persistent, line{3, 0}
		if r == 1 {
			start, wait = line{3, 0}, persistent
		}
		want := map[string]line{"Put": {1, 24}, "Get": {1, 16}, "Fence": {2, 0}, "Lock": {1, 0}, "Unlock": {1, 0},
			"Start": start, "Wait": wait, "CollStart": {3, 24}, "CollWait": {3, 0}}
		for op, w := range want {
			if got[op] != w {
				t.Errorf("rank %d: %s: %+v, want %+v (profile %+v)", r, op, got[op], w, p.Ops)
			}
		}
		if len(p.Peers) != 1 {
			t.Fatalf("rank %d: peers %+v, want one", r, p.Peers)
		}
		pp := p.Peers[0]
		wantPeer := commtune.PeerProfile{Rank: 1, Sends: 3, SentBytes: 72}
		if r == 1 {
			wantPeer = commtune.PeerProfile{Rank: 0, Receives: 3, ReceivedBytes: 72}
		}
		if pp != wantPeer {
			t.Errorf("rank %d: peer %+v, want %+v (one-sided calls are not point-to-point traffic)", r, pp, wantPeer)
		}
	}
}

// TestTimelineOneSidedAndPersistent: the same calls on the timeline, each
// rank's spans valid and in the order made, and none of the collective
// calls the window's making and freeing make inside the library.
func TestTimelineOneSidedAndPersistent(t *testing.T) {
	const n = 2
	dir := t.TempDir()
	t.Setenv(commtune.EnvTrace, dir)
	if err := commtune.Local(n, func(c *commtune.Comm) error { return oneSidedAndPersistent(context.Background(), c) }); err != nil {
		t.Fatal(err)
	}
	job, err := trace.ReadChecked(dir, n)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"Fence", "Put", "Fence", "Lock", "Get", "Unlock"}
	for range 3 {
		want = append(want, "Start", "CollStart", "Wait", "CollWait")
	}
	for r, spans := range job.Spans {
		var names []string
		for _, s := range spans {
			names = append(names, s.Name)
		}
		if !slices.Equal(names, want) {
			t.Errorf("rank %d: spans %v, want %v", r, names, want)
		}
	}
}

// TestProfileBlockingCollectives: every blocking collective counts under
// its own name, with its bytes and the algorithm it ran, not as the
// nonblocking call it shares its preparation with.
func TestProfileBlockingCollectives(t *testing.T) {
	const n = 2
	ctx := context.Background()
	calls := []struct {
		name string
		run  func(c *commtune.Comm) error
	}{
		{"ReduceScatterBlock", func(c *commtune.Comm) error {
			return commtune.ReduceScatterBlock(ctx, c, make([]float64, 2), make([]float64, 1), commtune.Sum)
		}},
		{"ReduceScatter", func(c *commtune.Comm) error {
			return commtune.ReduceScatter(ctx, c, make([]float64, 2), make([]float64, 1), []int{1, 1}, commtune.Sum)
		}},
		{"Alltoall", func(c *commtune.Comm) error { return commtune.Alltoall(ctx, c, make([]float64, 2), make([]float64, 2)) }},
		{"Scatterv", func(c *commtune.Comm) error {
			return commtune.Scatterv(ctx, c, make([]float64, 2), []int{1, 1}, []int{0, 1}, make([]float64, 1), 0)
		}},
		{"Gatherv", func(c *commtune.Comm) error {
			return commtune.Gatherv(ctx, c, make([]float64, 1), make([]float64, 2), []int{1, 1}, []int{0, 1}, 0)
		}},
		{"Allgatherv", func(c *commtune.Comm) error {
			return commtune.Allgatherv(ctx, c, make([]float64, 1), make([]float64, 2), []int{1, 1}, []int{0, 1})
		}},
		{"Alltoallv", func(c *commtune.Comm) error {
			return commtune.Alltoallv(ctx, c, make([]float64, 2), []int{1, 1}, []int{0, 1}, make([]float64, 2), []int{1, 1}, []int{0, 1})
		}},
	}
	profiles := profilesOf(t, n, func(c *commtune.Comm) (*commtune.Comm, error) {
		for _, call := range calls {
			if err := call.run(c); err != nil {
				return nil, fmt.Errorf("%s: %w", call.name, err)
			}
		}
		return c, nil
	})
	for r, p := range profiles {
		got := opsOf(p)
		if len(got) != len(calls) {
			t.Errorf("rank %d: operations %+v, want exactly the %d called", r, p.Ops, len(calls))
		}
		for _, call := range calls {
			o, ok := got[call.name]
			if !ok || o.Calls != 1 || len(o.Paths) != 1 || o.Paths[0].Algorithm == "" {
				t.Errorf("rank %d: %s: %+v, want one call with its algorithm", r, call.name, o)
			}
		}
	}
}

// TestProfileHaloBytes: a Halo's exchanges count the bytes they send to
// other ranks: on a ring of 4 ranks (periodic, one dimension), 10 cells
// of 2 float64 values and a halo 1 cell deep, each exchange sends one
// cell each way, 32 bytes; Start counts them, Wait does not.
func TestProfileHaloBytes(t *testing.T) {
	const n, rounds = 4, 5
	ctx := context.Background()
	profiles := profilesOf(t, n, func(c *commtune.Comm) (*commtune.Comm, error) {
		cart, err := c.Cart([]int{n}, []bool{true})
		if err != nil {
			return nil, err
		}
		h, err := commtune.NewHalo(cart, make([]float64, (10+2)*2), []int{10}, 1, 2, commtune.WithHaloImpl(commtune.DefaultHaloImpl))
		if err != nil {
			return nil, err
		}
		for range rounds {
			if err := h.Exchange(ctx); err != nil {
				return nil, err
			}
		}
		if err := h.Start(ctx); err != nil {
			return nil, err
		}
		return cart.Comm(), h.Wait(ctx)
	})
	for r, p := range profiles {
		got := opsOf(p)
		for op, want := range map[string][2]int64{"HaloExchange": {rounds, rounds * 32}, "HaloStart": {1, 32}, "HaloWait": {1, 0}} {
			if o := got[op]; o.Calls != want[0] || o.Bytes != want[1] {
				t.Errorf("rank %d: %s: %d calls, %d bytes; want %d, %d (profile %+v)", r, op, o.Calls, o.Bytes, want[0], want[1], p.Ops)
			}
		}
	}
}

// TestProfileNeighbor: neighbourhood collectives count on the
// neighbourhood's communicator, the blocking ones with their wait, the
// nonblocking ones apart from NeighborWait.
func TestProfileNeighbor(t *testing.T) {
	const n = 2
	ctx := context.Background()
	profiles := profilesOf(t, n, func(c *commtune.Comm) (*commtune.Comm, error) {
		other := []int{1 - c.Rank()}
		nb, err := c.Neighborhood(other, other)
		if err != nil {
			return nil, err
		}
		for range 2 {
			if err := commtune.NeighborAllgather(ctx, nb, []float64{1}, make([]float64, 1)); err != nil {
				return nil, err
			}
		}
		q, err := commtune.IneighborAlltoall(nb, []float64{1, 2}, make([]float64, 2))
		if err != nil {
			return nil, err
		}
		return nb.Comm(), q.Wait(ctx)
	})
	for r, p := range profiles {
		got := map[string][2]int64{}
		for op, o := range opsOf(p) {
			got[op] = [2]int64{o.Calls, o.Bytes}
		}
		want := map[string][2]int64{"NeighborAllgather": {2, 16}, "IneighborAlltoall": {1, 16}, "NeighborWait": {1, 0}}
		if !maps.Equal(got, want) {
			t.Errorf("rank %d: %v, want %v", r, got, want)
		}
	}
}

// profilesOf runs program on n goroutine ranks and returns, by rank, the
// Profile of the communicator it returns, once it has returned.
func profilesOf(t *testing.T, n int, program func(c *commtune.Comm) (*commtune.Comm, error)) []commtune.Profile {
	t.Helper()
	profiles := make([]commtune.Profile, n)
	err := commtune.Local(n, func(c *commtune.Comm) error {
		of, err := program(c)
		if err != nil {
			return err
		}
		profiles[c.Rank()] = of.Profile()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return profiles
}

// opsOf indexes a Profile's operations by name.
func opsOf(p commtune.Profile) map[string]commtune.OpProfile {
	m := map[string]commtune.OpProfile{}
	for _, o := range p.Ops {
		m[o.Op] = o
	}
	return m
}
