package core

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/commtune/commtune/internal/driver"
	"github.com/commtune/commtune/internal/sched"
)

// TestPick: a contiguous send takes the entry for its size, a pull
// included; a message that cannot be pulled (a vector send, a one-sided
// put) takes the last Put method whose range starts at or below its size,
// or the rail's default where only a pull is named.
func TestPick(t *testing.T) {
	rails := []driver.Caps{{Transport: "shm", SingleCopy: true, Methods: []driver.Method{driver.MethodCopy, driver.MethodCacheFree, driver.MethodVmsplice}}}
	tests := []struct {
		name       string
		large      []LargeMethod
		n          int
		contiguous string // the entry's name, "" for the rail's default
		push       string
	}{
		{"no methods", nil, 1 << 20, "", ""},
		{"pull only", []LargeMethod{{Min: 1000, Method: MethodPull}}, 1 << 20, MethodPull, ""},
		{"pull above copy", []LargeMethod{{Min: 1000, Method: "copy"}, {Min: 1 << 16, Method: MethodPull}}, 1 << 20, MethodPull, "copy"},
		{"pull between vmsplice and cachefree", []LargeMethod{{Min: 1000, Method: "vmsplice"}, {Min: 1 << 16, Method: MethodPull}, {Min: 1 << 22, Method: "cachefree"}}, 1 << 20, MethodPull, "vmsplice"},
		{"cachefree above the pull", []LargeMethod{{Min: 1000, Method: MethodPull}, {Min: 1 << 22, Method: "cachefree"}}, 1 << 23, "cachefree", "cachefree"},
		{"below every method", []LargeMethod{{Min: 1 << 16, Method: "cachefree"}}, 1000, "", ""},
		{"out of order: the size decides", []LargeMethod{{Min: 1 << 20, Method: "cachefree"}, {Min: 1000, Method: "copy"}}, 1 << 19, "copy", "copy"},
		{"equal Mins: the last one", []LargeMethod{{Min: 1000, Method: "copy"}, {Min: 1000, Method: "vmsplice"}}, 1000, "vmsplice", "vmsplice"},
	}
	name := func(lm largeMethods, i int) string {
		if i < 0 {
			return ""
		}
		return lm[i].name
	}
	for _, tc := range tests {
		lm, err := resolveMethods(tc.large, rails, true)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := name(lm, lm.pick(tc.n, true)); got != tc.contiguous {
			t.Errorf("%s: contiguous send takes %q, want %q", tc.name, got, tc.contiguous)
		}
		i := lm.pick(tc.n, false)
		if got := name(lm, i); got != tc.push {
			t.Errorf("%s: vector send takes %q, want %q", tc.name, got, tc.push)
		}
		if want, _ := driver.MethodNamed(tc.push); lm.put(i) != want {
			t.Errorf("%s: vector send's Put method %v, want %v", tc.name, lm.put(i), want)
		}
	}
}

// TestResolveMethods: a Put method is known by its identity, whatever
// order each rail lists its methods in, and must be offered by every rail
// to the peer; a pull needs a rail that can.
func TestResolveMethods(t *testing.T) {
	shm := func(ms ...driver.Method) driver.Caps { return driver.Caps{Transport: "shm", Methods: ms} }
	copyFirst := shm(driver.MethodCopy, driver.MethodCacheFree, driver.MethodVmsplice)
	vmspliceFirst := shm(driver.MethodVmsplice, driver.MethodCacheFree, driver.MethodCopy)
	tests := []struct {
		name  string
		large []LargeMethod
		rails []driver.Caps
		pull  bool
		err   string // "" when accepted
		puts  []driver.Method
	}{
		{"rails list methods in different orders", []LargeMethod{{Min: 1000, Method: "copy"}, {Min: 1 << 20, Method: "vmsplice"}}, []driver.Caps{copyFirst, vmspliceFirst}, false, "",
			[]driver.Method{driver.MethodCopy, driver.MethodVmsplice}},
		{"one rail lacks the method", []LargeMethod{{Min: 1000, Method: "vmsplice"}}, []driver.Caps{copyFirst, shm(driver.MethodCopy, driver.MethodCacheFree)}, false,
			`method "vmsplice": rail 1 (shm) offers [copy cachefree]`, nil},
		{"a rail with no methods", []LargeMethod{{Min: 1000, Method: "copy"}}, []driver.Caps{{Transport: "tcp"}}, false, `method "copy": rail 0 (tcp) offers []`, nil},
		{"no such method", []LargeMethod{{Min: 1000, Method: "cma"}}, []driver.Caps{copyFirst}, true, `method "cma": no such method`, nil},
		{"pull without a rail that can", []LargeMethod{{Min: 1000, Method: MethodPull}}, []driver.Caps{copyFirst}, false, `method "pull": no rail can pull`, nil},
		{"pull", []LargeMethod{{Min: 1000, Method: MethodPull}}, []driver.Caps{copyFirst}, true, "", []driver.Method{driver.MethodDefault}},
	}
	for _, tc := range tests {
		lm, err := resolveMethods(tc.large, tc.rails, tc.pull)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.err != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.err)):
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.err)
		case err == nil:
			var puts []driver.Method
			for _, e := range lm {
				puts = append(puts, e.put)
			}
			if !slices.Equal(puts, tc.puts) {
				t.Errorf("%s: Put methods %v, want %v", tc.name, puts, tc.puts)
			}
		}
	}
}

// methodRail is a fakeRail that offers Put methods, listed in its own
// order, and records the method of each Put frame it carries.
type methodRail struct {
	*fakeRail
	methods []driver.Method
	puts    []driver.Method
}

func (r *methodRail) Caps() driver.Caps {
	c := r.fakeRail.Caps()
	c.Methods = r.methods
	return c
}

func (r *methodRail) Post(f *driver.Frame) (bool, error) {
	if f.Kind == driver.Put {
		r.puts = append(r.puts, f.Method)
	}
	return r.fakeRail.Post(f)
}

// TestMethodOnEveryRail: two rails list their methods in different
// orders; a message split over both carries the policy's method on every
// chunk, whichever rail takes it.
func TestMethodOnEveryRail(t *testing.T) {
	n := &net{t: t}
	orders := [][]driver.Method{
		{driver.MethodCopy, driver.MethodCacheFree, driver.MethodVmsplice},
		{driver.MethodVmsplice, driver.MethodCacheFree, driver.MethodCopy},
	}
	var rails [2][]*methodRail
	for r := 0; r < 2; r++ {
		sc := sched.New(2, sched.Split{Rule: sched.SplitIso})
		e, err := NewEngine(r, 2, Config{RendezvousThreshold: 1024}, sc)
		if err != nil {
			t.Fatal(err)
		}
		n.engines, n.scheds = append(n.engines, e), append(n.scheds, sc)
	}
	for r := 0; r < 2; r++ {
		n.scheds[r].AddRail(&fakeRail{n: n, from: r, to: r})
		for i, ms := range orders {
			mr := &methodRail{fakeRail: &fakeRail{n: n, from: r, to: 1 - r, idx: i}, methods: ms}
			mr.owner = mr
			rails[r] = append(rails[r], mr)
			n.scheds[r].AddRail(mr)
		}
		n.engines[r].Configure()
		if err := n.engines[r].SetPolicy(1-r, Policy{Rendezvous: 1024, Iovec: 1, Large: []LargeMethod{{Min: 1025, Method: "cachefree"}}}); err != nil {
			t.Fatal(err)
		}
	}
	msg := payload(256<<10, 3)
	buf := make([]byte, len(msg))
	rr := n.engines[1].Irecv(0, 0, 0, buf)
	sr := n.engines[0].Isend(0, 1, 0, msg)
	n.run(nil)
	mustDone(t, sr)
	mustDone(t, rr)
	if !bytes.Equal(buf, msg) {
		t.Fatal("payload differs")
	}
	for i, mr := range rails[0] {
		if len(mr.puts) == 0 {
			t.Errorf("rail %d carried no chunk: the message was not split", i)
		}
		for _, m := range mr.puts {
			if m != driver.MethodCacheFree {
				t.Errorf("rail %d carried a chunk by %v, want %v", i, m, driver.MethodCacheFree)
			}
		}
	}
}
