package commtune_test

import (
	"context"
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
