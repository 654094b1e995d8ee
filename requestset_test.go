package commtune

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"
)

// setKind is one entry of a set of requests in TestRequestSets.
type setKind int

const (
	nullIface   setKind = iota // a nil Pending
	nullReq                    // a nil request of the set's type
	p2pDone                    // a self-receive of a message already sent
	p2pTrunc                   // the same into a short buffer: ErrTruncate
	p2pPending                 // a self-receive whose message is sent on release
	collDone                   // an Ibarrier on a one-rank communicator, complete
	collPending                // an Ibcast from rank 1, which joins on release
	nbrDone                    // an exchange with oneself, complete
	nbrPending                 // an exchange with rank 1, which joins on release
)

func (k setKind) done() bool    { return k == p2pDone || k == p2pTrunc || k == collDone || k == nbrDone }
func (k setKind) pending() bool { return k == p2pPending || k == collPending || k == nbrPending }
func (k setKind) partner() bool { return k == collPending || k == nbrPending }

// setEntry is one request of a set and what it must report.
type setEntry struct {
	kind    setKind
	q       Pending
	st      Status // expected once complete
	release func() error
	check   func() error // its data, once complete
}

// setSentinel is what rank from sends for entry i of case k: it names all
// three, so a value from another entry, case or rank cannot pass.
func setSentinel(k, i, from int) int32 { return int32(100000*(from+1) + 100*k + i) }

// setPayload is the self-message of entry i of case k.
func setPayload(k, i, n int) []byte {
	b := make([]byte, n)
	for j := range b {
		b[j] = byte(k*31 + i*7 + j)
	}
	return b
}

// setCases are the sets: mixes of kinds, each checked through a []Pending
// or through a slice of one concrete type (as "request", "coll", "nbr").
var setCases = []struct {
	name  string
	as    string
	kinds []setKind
}{
	{"mixed", "pending", []setKind{nullIface, collPending, p2pDone, nbrPending, nullReq, p2pTrunc, collDone, nbrDone, p2pPending}},
	{"mixed all pending", "pending", []setKind{collPending, nbrPending, p2pPending}},
	{"mixed all done, two errors", "pending", []setKind{p2pTrunc, p2pDone, collDone, nullIface, nbrDone, p2pTrunc}},
	{"mixed pending first", "pending", []setKind{p2pPending, nullReq, collDone, collPending}},
	{"nulls only", "pending", []setKind{nullIface, nullReq, nullIface}},
	{"empty", "pending", nil},
	{"requests", "request", []setKind{p2pDone, p2pPending, nullReq, p2pPending, p2pTrunc}},
	{"requests all done", "request", []setKind{p2pDone, p2pDone}},
	{"requests nulls only", "request", []setKind{nullReq}},
	{"collectives", "coll", []setKind{collPending, nullReq, collDone, collPending}},
	{"neighbourhood", "nbr", []setKind{nbrDone, nbrPending, nullReq, nbrPending}},
}

// TestRequestSets runs each set on two goroutine ranks. Rank 0 builds the
// set, checks what TestAll, TestAny, TestSome, WaitSome and WaitAny report
// while some are pending (and that WaitAll, WaitSome and WaitAny give up
// with their context, leaving them pending), then releases the pending
// ones one at a time and checks that WaitAny and WaitSome return exactly
// the one released, and WaitAll the rest with every status, error and
// payload. Rank 1 joins the collective and neighbourhood requests when
// told.
func TestRequestSets(t *testing.T) {
	for k, tc := range setCases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			err := Local(2, func(world *Comm) error {
				d, err := world.Dup()
				if err != nil {
					return err
				}
				defer d.Close()
				me := d.Rank()
				self, err := d.Split(ctx, me, 0)
				if err != nil {
					return err
				}
				defer self.Close()
				pair, err := d.Neighborhood([]int{1 - me}, []int{1 - me})
				if err != nil {
					return err
				}
				alone, err := d.Neighborhood([]int{me}, []int{me})
				if err != nil {
					return err
				}
				if me == 1 {
					return setPartner(ctx, d, pair, k, tc.kinds)
				}
				entries, err := buildSet(ctx, d, self, pair, alone, k, tc.kinds)
				if err != nil {
					return err
				}
				switch tc.as {
				case "request":
					return checkSet(ctx, entries, asType[*Request](entries))
				case "coll":
					return checkSet(ctx, entries, asType[*CollRequest](entries))
				case "nbr":
					return checkSet(ctx, entries, asType[*NeighborRequest](entries))
				}
				return checkSet(ctx, entries, asType[Pending](entries))
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

// asType returns the entries' requests as a slice of R. A null entry
// stays as it is in a []Pending (a nil *Request inside stays typed) and is
// R's zero value, a nil request of that type, in a slice of one type.
func asType[R Pending](entries []setEntry) []R {
	out := make([]R, len(entries))
	for i, e := range entries {
		if v, ok := e.q.(R); ok {
			out[i] = v
		}
	}
	return out
}

// setPartner is rank 1: it joins entry i's collective or exchange when
// rank 0 says so (tag 1000+i), in the entries' order.
func setPartner(ctx context.Context, d *Comm, pair *Neighborhood, k int, kinds []setKind) error {
	for i, kind := range kinds {
		if !kind.partner() {
			continue
		}
		if _, err := d.Recv(ctx, nil, 0, 1000+i); err != nil {
			return err
		}
		switch kind {
		case collPending:
			if err := Bcast(ctx, d, []int32{setSentinel(k, i, 1)}, 1); err != nil {
				return err
			}
		case nbrPending:
			recv := []int32{-1}
			if err := NeighborAlltoall(ctx, pair, []int32{setSentinel(k, i, 1)}, recv); err != nil {
				return err
			}
			if recv[0] != setSentinel(k, i, 0) {
				return fmt.Errorf("entry %d: rank 1 received %d from rank 0, want %d", i, recv[0], setSentinel(k, i, 0))
			}
		}
	}
	return nil
}

// buildSet starts rank 0's requests of case k. Complete entries are
// complete on return.
func buildSet(ctx context.Context, d, self *Comm, pair, alone *Neighborhood, k int, kinds []setKind) ([]setEntry, error) {
	var entries []setEntry
	for i, kind := range kinds {
		e := setEntry{kind: kind}
		tag := 100 + i
		var err error
		switch kind {
		case nullIface:
		case nullReq:
			e.q = (*Request)(nil)
		case p2pDone, p2pTrunc, p2pPending:
			msg := setPayload(k, i, 8+i)
			room := len(msg)
			if kind == p2pTrunc {
				room = 4
			}
			buf := make([]byte, room)
			e.st = Status{Source: 0, Tag: tag, Count: room}
			e.check = func() error {
				if !bytes.Equal(buf, msg[:room]) {
					return fmt.Errorf("entry %d received % x, want % x", i, buf, msg[:room])
				}
				return nil
			}
			send := func() error { return d.Send(ctx, msg, 0, tag) }
			if kind == p2pPending {
				e.release = send
			} else if err = send(); err != nil {
				return nil, err
			}
			var q *Request
			q, err = d.Irecv(buf, 0, tag)
			e.q = q
		case collDone:
			var q *CollRequest
			q, err = self.Ibarrier(ctx)
			e.q = q
		case collPending:
			buf := []int32{-1}
			var q *CollRequest
			q, err = Ibcast(ctx, d, buf, 1)
			e.q = q
			e.check = func() error {
				if buf[0] != setSentinel(k, i, 1) {
					return fmt.Errorf("entry %d: Ibcast gave %d, want %d", i, buf[0], setSentinel(k, i, 1))
				}
				return nil
			}
		case nbrDone, nbrPending:
			recv := []int32{-1}
			nb, from := alone, 0
			if kind == nbrPending {
				nb, from = pair, 1
			}
			var q *NeighborRequest
			q, err = IneighborAlltoall(nb, []int32{setSentinel(k, i, 0)}, recv)
			e.q = q
			e.check = func() error {
				if recv[0] != setSentinel(k, i, from) {
					return fmt.Errorf("entry %d: exchange gave %d, want %d", i, recv[0], setSentinel(k, i, from))
				}
				return nil
			}
		}
		if err != nil {
			return nil, fmt.Errorf("entry %d: %w", i, err)
		}
		if kind.partner() {
			e.release = func() error { return d.Send(ctx, nil, 1, 1000+i) }
		}
		if kind.done() {
			select {
			case <-e.q.Done():
			case <-ctx.Done():
				return nil, fmt.Errorf("entry %d did not complete: %w", i, ctx.Err())
			}
		}
		entries = append(entries, e)
	}
	return entries, nil
}

// checkSet checks every call over reqs (entries' requests as R).
func checkSet[R Pending](ctx context.Context, entries []setEntry, reqs []R) error {
	var doneIdx, pendIdx, liveIdx []int
	var truncs []int
	for i, e := range entries {
		switch {
		case e.kind.done():
			doneIdx = append(doneIdx, i)
		case e.kind.pending():
			pendIdx = append(pendIdx, i)
		}
		if e.kind != nullIface && e.kind != nullReq {
			liveIdx = append(liveIdx, i)
		}
		if e.kind == p2pTrunc {
			truncs = append(truncs, i)
		}
	}
	live := len(liveIdx) > 0
	// Phase 1: some complete, some pending.
	if err := checkSome("TestSome", entries, doneIdx, live, truncs, func() ([]int, []Status, error) { return TestSome(reqs...) }); err != nil {
		return err
	}
	if err := checkAny("TestAny", entries, doneIdx, live, func() (int, Status, bool, error) { return TestAny(reqs...) }); err != nil {
		return err
	}
	ok, sts, err := TestAll(reqs...)
	if len(pendIdx) > 0 {
		if ok || sts != nil || err != nil {
			return fmt.Errorf("TestAll with %v pending: %v %v %v, want false and nothing reported", pendIdx, ok, sts, err)
		}
	} else if err := checkAll("TestAll", entries, ok, sts, err, truncs); err != nil {
		return err
	}
	if len(doneIdx) > 0 || !live {
		// Nothing to wait for: the Wait forms answer at once.
		if err := checkSome("WaitSome", entries, doneIdx, live, truncs, func() ([]int, []Status, error) { return WaitSome(ctx, reqs...) }); err != nil {
			return err
		}
		if err := checkAny("WaitAny", entries, doneIdx, live, func() (int, Status, bool, error) {
			i, st, err := WaitAny(ctx, reqs...)
			return i, st, true, err
		}); err != nil {
			return err
		}
	}
	if len(pendIdx) > 0 {
		// Their contexts end first: nothing is reported, nothing changes.
		ended, stop := context.WithCancel(ctx)
		stop()
		short, stop2 := context.WithTimeout(ctx, 20*time.Millisecond)
		defer stop2()
		if _, err := WaitAll(ended, reqs...); !errors.Is(err, context.Canceled) {
			return fmt.Errorf("WaitAll with an ended context: %v", err)
		}
		view := slices.Clone(reqs)
		for _, i := range doneIdx {
			var zero R
			view[i] = zero
		}
		if idx, sts, err := WaitSome(short, view...); idx != nil || sts != nil || !errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("WaitSome with none complete and a short context: %v %v %v", idx, sts, err)
		}
		if i, _, err := WaitAny(ended, view...); i != -1 || !errors.Is(err, context.Canceled) {
			return fmt.Errorf("WaitAny with none complete and an ended context: %d %v", i, err)
		}
		if ok, _, _ := TestAll(reqs...); ok {
			return fmt.Errorf("requests complete after the waits gave up")
		}

		// Phase 2: release the pending ones in order, one at a time.
		// WaitAny, then WaitSome, over the set with its complete entries
		// set to nil, return exactly the one released.
		released := make(chan error, len(pendIdx))
		releaseLater := func(i int) {
			go func() {
				time.Sleep(5 * time.Millisecond)
				released <- entries[i].release()
			}()
		}
		releaseLater(pendIdx[0])
		i, st, err := WaitAny(ctx, view...)
		if err := <-released; err != nil {
			return err
		}
		if i != pendIdx[0] || err != nil || st != entries[i].st {
			return fmt.Errorf("WaitAny after releasing entry %d: %d %+v %v, want status %+v", pendIdx[0], i, st, err, entries[pendIdx[0]].st)
		}
		var zero R
		view[i] = zero
		rest := pendIdx[1:]
		if len(rest) > 0 {
			releaseLater(rest[0])
			idx, sts, err := WaitSome(ctx, view...)
			if err := <-released; err != nil {
				return err
			}
			if !slices.Equal(idx, rest[:1]) || err != nil || len(sts) != 1 || sts[0] != entries[rest[0]].st {
				return fmt.Errorf("WaitSome after releasing entry %d: %v %+v %v", rest[0], idx, sts, err)
			}
			rest = rest[1:]
		}
		for _, i := range rest {
			if err := entries[i].release(); err != nil {
				return err
			}
		}
	}
	// Phase 3: all complete.
	sts, err = WaitAll(ctx, reqs...)
	if err := checkAll("WaitAll", entries, true, sts, err, truncs); err != nil {
		return err
	}
	ok, sts, err = TestAll(reqs...)
	if err := checkAll("TestAll", entries, ok, sts, err, truncs); err != nil {
		return err
	}
	if err := checkSome("TestSome at the end", entries, liveIdx, live, truncs, func() ([]int, []Status, error) { return TestSome(reqs...) }); err != nil {
		return err
	}
	if err := checkAny("TestAny at the end", entries, liveIdx, live, func() (int, Status, bool, error) { return TestAny(reqs...) }); err != nil {
		return err
	}
	for i, e := range entries {
		if e.check != nil {
			if err := e.check(); err != nil {
				return fmt.Errorf("entry %d: %w", i, err)
			}
		}
	}
	return nil
}

// checkErrs checks that err joins exactly one truncation per index of
// truncs among those reported (in).
func checkErrs(what string, err error, truncs, in []int) error {
	want := 0
	for _, i := range truncs {
		if slices.Contains(in, i) {
			want++
		}
	}
	if want == 0 {
		if err != nil {
			return fmt.Errorf("%s: error %v, want none", what, err)
		}
		return nil
	}
	j, ok := err.(interface{ Unwrap() []error })
	if !ok || len(j.Unwrap()) != want || !errors.Is(err, ErrTruncate) {
		return fmt.Errorf("%s: error %v, want %d truncations joined", what, err, want)
	}
	return nil
}

func checkAll(what string, entries []setEntry, ok bool, sts []Status, err error, truncs []int) error {
	if !ok || len(sts) != len(entries) {
		return fmt.Errorf("%s: %v with %d statuses, want true and %d", what, ok, len(sts), len(entries))
	}
	all := make([]int, len(entries))
	for i, e := range entries {
		all[i] = i
		if sts[i] != e.st {
			return fmt.Errorf("%s: status %d is %+v, want %+v", what, i, sts[i], e.st)
		}
	}
	return checkErrs(what, err, truncs, all)
}

func checkSome(what string, entries []setEntry, want []int, live bool, truncs []int, call func() ([]int, []Status, error)) error {
	idx, sts, err := call()
	if !live {
		if idx != nil || sts != nil || err != nil {
			return fmt.Errorf("%s over no request: %v %v %v, want nil indices", what, idx, sts, err)
		}
		return nil
	}
	if idx == nil || !slices.Equal(idx, want) || len(sts) != len(idx) {
		return fmt.Errorf("%s: indices %v (nil %v) with %d statuses, want %v", what, idx, idx == nil, len(sts), want)
	}
	for j, i := range idx {
		if sts[j] != entries[i].st {
			return fmt.Errorf("%s: status of %d is %+v, want %+v", what, i, sts[j], entries[i].st)
		}
	}
	return checkErrs(what, err, truncs, idx)
}

func checkAny(what string, entries []setEntry, done []int, live bool, call func() (int, Status, bool, error)) error {
	i, st, ok, err := call()
	switch {
	case !live:
		if i != -1 || !ok || err != nil || st != (Status{}) {
			return fmt.Errorf("%s over no request: %d %+v %v %v, want -1 and true", what, i, st, ok, err)
		}
	case len(done) == 0:
		if i != -1 || ok || err != nil {
			return fmt.Errorf("%s with none complete: %d %v %v, want -1 and false", what, i, ok, err)
		}
	default:
		want := done[0]
		if i != want || !ok || st != entries[want].st {
			return fmt.Errorf("%s: %d %+v %v, want %d %+v", what, i, st, ok, want, entries[want].st)
		}
		if (entries[want].kind == p2pTrunc) != errors.Is(err, ErrTruncate) {
			return fmt.Errorf("%s: entry %d's error %v", what, want, err)
		}
	}
	return nil
}

// fakeRequest is a request kind the calls know only as a Pending (as a
// persistent request is): no waiter, only Done and outcome.
type fakeRequest struct {
	done chan struct{}
	err  error
}

func (f *fakeRequest) Done() <-chan struct{} { return f.done }

func (f *fakeRequest) outcome() (Status, bool, error) {
	select {
	case <-f.done:
		return Status{Tag: 77}, true, f.err
	default:
		return Status{}, false, nil
	}
}

// TestIsNull: a nil interface and a nil request of every kind inside one
// are null; requests are not.
func TestIsNull(t *testing.T) {
	tests := []struct {
		name string
		q    Pending
		null bool
	}{
		{"nil interface", nil, true},
		{"nil *Request", (*Request)(nil), true},
		{"nil *CollRequest", (*CollRequest)(nil), true},
		{"nil *NeighborRequest", (*NeighborRequest)(nil), true},
		{"nil kind the switch does not know", (*fakeRequest)(nil), true},
		{"*CollRequest", &CollRequest{done: make(chan struct{})}, false},
		{"*NeighborRequest", &NeighborRequest{}, false},
		{"kind the switch does not know", &fakeRequest{}, false},
	}
	for _, tc := range tests {
		if got := isNull(tc.q); got != tc.null {
			t.Errorf("%s: isNull %v, want %v", tc.name, got, tc.null)
		}
	}
}

// TestSetsOfOtherKinds: a request kind with only Done and outcome is
// waited for on Done, alone and among others, and its error is joined.
func TestSetsOfOtherKinds(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	boom := errors.New("boom")
	a, b, c := &fakeRequest{done: make(chan struct{})}, &fakeRequest{done: make(chan struct{}), err: boom}, &fakeRequest{done: make(chan struct{})}
	go func() {
		time.Sleep(5 * time.Millisecond)
		close(b.done)
	}()
	if i, st, err := WaitAny(ctx, a, nil, b, c); i != 2 || st.Tag != 77 || !errors.Is(err, boom) {
		t.Fatalf("WaitAny: %d %+v %v", i, st, err)
	}
	go func() {
		time.Sleep(5 * time.Millisecond)
		close(c.done)
	}()
	if idx, _, err := WaitSome(ctx, a, nil, nil, c); !slices.Equal(idx, []int{3}) || err != nil {
		t.Fatalf("WaitSome: %v %v", idx, err)
	}
	go func() {
		time.Sleep(5 * time.Millisecond)
		close(a.done)
	}()
	if _, err := WaitAll(ctx, a); err != nil {
		t.Fatal(err)
	}
	sts, err := WaitAll(ctx, []Pending{a, b, nil, c, (*Request)(nil)}...)
	if !errors.Is(err, boom) || len(sts) != 5 || sts[0].Tag != 77 || sts[2] != (Status{}) || sts[4] != (Status{}) {
		t.Fatalf("WaitAll: %+v %v", sts, err)
	}
}

// TestNilNeighborRequest: a nil *NeighborRequest answers like the other
// nil requests, with no panic.
func TestNilNeighborRequest(t *testing.T) {
	var q *NeighborRequest
	if err := q.Wait(context.Background()); !errors.Is(err, errNilRequest) {
		t.Errorf("Wait: %v", err)
	}
	if done, err := q.Test(); !done || !errors.Is(err, errNilRequest) {
		t.Errorf("Test: %v %v", done, err)
	}
	select {
	case <-q.Done():
	default:
		t.Error("Done of a nil request is not closed")
	}
}
