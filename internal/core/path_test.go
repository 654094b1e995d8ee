package core

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/commtune/commtune/internal/driver"
	"github.com/commtune/commtune/internal/profile"
	"github.com/commtune/commtune/internal/sched"
)

// TestPath names the path of sizes on both sides of each threshold, for
// contiguous and segmented sends.
func TestPath(t *testing.T) {
	shm := Policy{Rendezvous: 16 << 10, Iovec: 256, Large: []LargeMethod{{Min: 16<<10 + 1, Method: "copy"}, {Min: 8 << 20, Method: "cachefree"}}}
	pull := Policy{Rendezvous: 4096, Iovec: 1, Large: []LargeMethod{{Min: 4097, Method: "vmsplice"}, {Min: 64 << 10, Method: MethodPull}, {Min: 1 << 20, Method: "cachefree"}}}
	pullOnly := Policy{Rendezvous: 0, Large: []LargeMethod{{Method: MethodPull}}}
	tests := []struct {
		p         Policy
		n         int64
		transport string
		l         Layout
		want      string
	}{
		{shm, 100, "shm", Contiguous, "eager-copy"},
		{shm, 256, "shm", Contiguous, "eager-iovec"},
		{shm, 16 << 10, "shm", Contiguous, "eager-iovec"},
		{shm, 16 << 10, "shm", Segmented, "eager-iovec"},
		{shm, 16<<10 + 1, "shm", Contiguous, "rendezvous/copy"},
		{shm, 8 << 20, "shm", Contiguous, "rendezvous/cachefree"},
		{shm, 8 << 20, "shm", Segmented, "rendezvous/cachefree"},
		{pull, 5000, "shm", Contiguous, "rendezvous/vmsplice"},
		{pull, 64 << 10, "shm", Contiguous, "rendezvous/cma"},
		{pull, 64 << 10, "shm", Segmented, "rendezvous/vmsplice"}, // pushed by the method below the pull
		{pull, 1 << 20, "shm", Segmented, "rendezvous/cachefree"},
		{pullOnly, 1, "shm", Contiguous, "rendezvous/cma"},
		{pullOnly, 1, "shm", Segmented, "rendezvous/copy"}, // the rail's own push
		{pullOnly, 1, "inproc", Segmented, "rendezvous"},
		{Policy{Rendezvous: 0}, 1, "shm", Contiguous, "rendezvous/copy"}, // the rail's own method
		{Policy{Rendezvous: 64 << 10, Iovec: 2048}, 1 << 20, "tcp", Contiguous, "rendezvous"},
		{Policy{Rendezvous: 64 << 10, Iovec: 2048}, math.MaxInt64, "tcp", Contiguous, "rendezvous"},
	}
	for _, tc := range tests {
		if got := tc.p.Path(tc.n, tc.transport, tc.l); got != tc.want {
			t.Errorf("%+v.Path(%d, %s, %d) = %s, want %s", tc.p, tc.n, tc.transport, tc.l, got, tc.want)
		}
	}
}

// TestRanges: one range per path, boundaries at the thresholds, an
// iovec threshold above the eager limit shows no iovec range.
func TestRanges(t *testing.T) {
	tests := []struct {
		name      string
		p         Policy
		transport string
		l         Layout
		want      string
	}{
		{"shm tiers", Policy{Rendezvous: 16 << 10, Iovec: 256, Large: []LargeMethod{{Min: 16<<10 + 1, Method: "copy"}, {Min: 8 << 20, Method: "cachefree"}}}, "shm", Contiguous,
			"0-256 eager-copy, 256-16385 eager-iovec, 16385-8388608 rendezvous/copy, 8388608- rendezvous/cachefree"},
		{"tcp defaults", Policy{Rendezvous: 64 << 10, Iovec: 2048}, "tcp", Contiguous,
			"0-2048 eager-copy, 2048-65537 eager-iovec, 65537- rendezvous"},
		{"iovec from the first byte", Policy{Rendezvous: 1000, Iovec: 1}, "tcp", Contiguous,
			"0-1001 eager-iovec, 1001- rendezvous"},
		{"iovec never", Policy{Rendezvous: 1000, Iovec: math.MaxInt, Large: []LargeMethod{{Min: 1001, Method: MethodPull}}}, "shm", Contiguous,
			"0-1001 eager-copy, 1001- rendezvous/cma"},
		{"iovec never, segmented", Policy{Rendezvous: 1000, Iovec: math.MaxInt, Large: []LargeMethod{{Min: 1001, Method: MethodPull}}}, "shm", Segmented,
			"0-1001 eager-copy, 1001- rendezvous/copy"},
		{"large method below the eager limit", Policy{Rendezvous: 4096, Iovec: 1, Large: []LargeMethod{{Min: 100, Method: "vmsplice"}, {Min: 1 << 20, Method: "copy"}}}, "shm", Contiguous,
			"0-4097 eager-iovec, 4097-1048576 rendezvous/vmsplice, 1048576- rendezvous/copy"},
		{"a pull between two pushes, segmented", Policy{Rendezvous: 4096, Iovec: 1, Large: []LargeMethod{{Min: 4097, Method: "copy"}, {Min: 1 << 16, Method: MethodPull}, {Min: 1 << 20, Method: "cachefree"}}}, "shm", Segmented,
			"0-4097 eager-iovec, 4097-1048576 rendezvous/copy, 1048576- rendezvous/cachefree"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, r := range tc.p.Ranges(tc.transport, tc.l) {
				to := ""
				if r.To != 0 {
					to = strconv.FormatInt(r.To, 10)
				}
				got = append(got, fmt.Sprintf("%d-%s %s", r.From, to, r.Path))
			}
			if g := strings.Join(got, ", "); g != tc.want {
				t.Errorf("Ranges = %s\nwant      %s", g, tc.want)
			}
		})
	}
}

// TestMethodNames: the profile's large-message methods and the core's
// methods name each other both ways, and every one of them names a curve
// the profile knows.
func TestMethodNames(t *testing.T) {
	tests := []struct{ large, core, curve string }{
		{"copy", "copy", "rendezvous/copy"},
		{"cma", MethodPull, "rendezvous/cma"},
		{"vmsplice", "vmsplice", "rendezvous/vmsplice"},
		{"cachefree", "cachefree", "rendezvous/cachefree"},
	}
	if len(tests) != len(profile.LargeMethods) {
		t.Fatalf("profile.LargeMethods = %v: a method without a case here", profile.LargeMethods)
	}
	for _, tc := range tests {
		if got := MethodFor(tc.large); got != tc.core {
			t.Errorf("MethodFor(%q) = %q, want %q", tc.large, got, tc.core)
		}
		if got := LargeName(tc.core); got != tc.large {
			t.Errorf("LargeName(%q) = %q, want %q", tc.core, got, tc.large)
		}
		if got := RendezvousCurve(tc.core); got != tc.curve {
			t.Errorf("RendezvousCurve(%q) = %q, want %q", tc.core, got, tc.curve)
		}
		if got := MethodOfCurve(tc.curve); got != tc.core {
			t.Errorf("MethodOfCurve(%q) = %q, want %q", tc.curve, got, tc.core)
		}
		if tc.core != MethodPull {
			if _, ok := driver.MethodNamed(tc.core); !ok {
				t.Errorf("%q is no driver.Method", tc.core)
			}
		}
	}
}

// pathRail is a rail that pulls (pullRail) and offers every Put method,
// recording the method of each Put frame it carries.
type pathRail struct {
	*pullRail
	puts []driver.Method
}

func (r *pathRail) Caps() driver.Caps {
	c := r.pullRail.Caps()
	c.Methods = []driver.Method{driver.MethodVmsplice, driver.MethodCopy, driver.MethodCacheFree}
	return c
}

func (r *pathRail) Post(f *driver.Frame) (bool, error) {
	if f.Kind == driver.Put {
		r.puts = append(r.puts, f.Method)
	}
	return r.pullRail.Post(f)
}

// TestPathIsWhatTheEngineDoes: messages of either layout, sent under a
// policy that pulls between two pushes, travel as Path names them: pulled
// where it says "rendezvous/cma", else as Put frames of the method its
// curve names (the rail's default where it names shm's own push).
func TestPathIsWhatTheEngineDoes(t *testing.T) {
	policies := []Policy{
		{Rendezvous: 1024, Iovec: 1, Large: []LargeMethod{{Min: 1025, Method: "vmsplice"}, {Min: 64 << 10, Method: MethodPull}, {Min: 1 << 20, Method: "cachefree"}}},
		{Rendezvous: 1024, Iovec: 1, Large: []LargeMethod{{Min: 64 << 10, Method: MethodPull}}},
	}
	for pi, pol := range policies {
		for _, size := range []int{2000, 100 << 10, 2 << 20} {
			for _, l := range []Layout{Contiguous, Segmented} {
				want := pol.Path(int64(size), "shm", l)
				t.Run(fmt.Sprintf("policy %d/%d bytes/layout %d", pi, size, l), func(t *testing.T) {
					n := &net{t: t}
					var rails [2]*pathRail
					for r := 0; r < 2; r++ {
						sc := sched.New(2, nil)
						e, err := NewEngine(r, 2, Config{RendezvousThreshold: 1024}, sc)
						if err != nil {
							t.Fatal(err)
						}
						n.engines, n.scheds = append(n.engines, e), append(n.scheds, sc)
					}
					for r := 0; r < 2; r++ {
						n.scheds[r].AddRail(&fakeRail{n: n, from: r, to: r})
						rails[r] = &pathRail{pullRail: &pullRail{fakeRail: &fakeRail{n: n, from: r, to: 1 - r}, exposed: map[uint64][]byte{}}}
						rails[r].owner = rails[r]
						n.scheds[r].AddRail(rails[r])
						n.engines[r].Configure()
						if err := n.engines[r].SetPolicy(1-r, pol); err != nil {
							t.Fatal(err)
						}
					}
					msg := payload(size, 5)
					rails[1].expose(msg)
					buf := make([]byte, size)
					rr := n.engines[1].Irecv(0, 0, 0, buf)
					var sr *Request
					if l == Contiguous {
						sr = n.engines[0].Isend(0, 1, 0, msg)
					} else {
						sr = n.engines[0].IsendV(0, 1, 0, [][]byte{msg[:size/3], msg[size/3:]})
					}
					n.run(nil)
					mustDone(t, sr)
					mustDone(t, rr)
					if !bytes.Equal(buf, msg) {
						t.Fatal("payload differs")
					}
					pulled := n.engines[0].Stats().PullSends == 1
					if pulled != (want == RendezvousCurve(MethodPull)) {
						t.Fatalf("Path says %s; pulled: %v", want, pulled)
					}
					if pulled {
						return
					}
					m, ok := driver.MethodNamed(MethodOfCurve(want))
					if !ok {
						t.Fatalf("Path says %s, no Put method", want)
					}
					for _, got := range rails[0].puts {
						if got != m && !(want == defaultPush("shm") && got == driver.MethodDefault) {
							t.Errorf("Path says %s; a chunk went by %v", want, got)
						}
					}
					if len(rails[0].puts) == 0 {
						t.Errorf("Path says %s; no Put frame", want)
					}
				})
			}
		}
	}
}
