// Package conformance holds commtune's point-to-point semantics suite: each
// case is a program every rank of a communicator runs, checking MPI's rules
// (ordering, wildcards, probe, truncation, zero-length, self-send,
// nonblocking completion, communicator isolation, sizes). The same cases
// run on goroutine ranks (commtune.Local) and on real processes started by
// the launcher, so every transport is held to the same rules.
package conformance

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"sort"

	"github.com/commtune/commtune"
)

// Case is one semantics check; Run is called on every rank.
type Case struct {
	Name     string
	MinRanks int
	Run      func(ctx context.Context, c *commtune.Comm) error
}

// Cases returns the suite. Every case needs at least MinRanks ranks and
// works with any larger number.
func Cases() []Case {
	return []Case{
		{"self-send", 1, selfSend},
		{"zero-length", 2, zeroLength},
		{"ordering", 2, ordering},
		{"ordering-mixed-protocols", 2, orderingMixed},
		{"any-source-any-tag", 2, anySourceAnyTag},
		{"probe", 2, probe},
		{"matched-probe", 2, matchedProbe},
		{"values", 2, values},
		{"neighbors", 1, neighbors},
		{"shared-memory", 1, shared},
		{"plain-structs", 1, plainStructs},
		{"truncation", 2, truncation},
		{"waitall-waitany", 2, waitAllAny},
		{"dup-isolation", 2, dupIsolation},
		{"split", 2, split},
		{"sizes", 2, sizes},
		{"sendrecv-ring", 2, sendrecvRing},
		{"cancel", 2, cancel},
		{"bad-arguments", 1, badArguments},
		{"tags", 1, tags},
		{"ranks-out-of-range", 1, ranksOutOfRange},
		{"nil-communicator", 1, nilComm},
		{"logical-op-domain", 1, logicalDomain},
		{"context-and-cancel", 2, contextCase},
		{"collective-mismatch", 2, mismatchCase},
		{"rma-fence", 1, rmaFence},
		{"rma-accumulate", 1, rmaAccumulate},
		{"rma-fetch-and-op", 1, rmaFetchAndOp},
		{"rma-exclusive-lock", 1, rmaExclusive},
		{"rma-pscw", 1, rmaPSCW},
		{"rma-passive-target", 2, rmaPassive},
		{"rma-misuse", 1, rmaMisuse},
		{"rma-requests", 1, rmaRequests},
		{"group-algebra", 1, groupAlgebra},
		{"create-from-group", 1, createFromGroup},
		{"create-group-half", 2, createGroupHalf},
		{"cart-sub", 1, cartSub},
		{"ssend", 2, ssend},
		{"sendrecv-replace", 1, sendrecvReplace},
		{"completion-sets", 2, completionSets},
		{"persistent", 1, persistent},
	}
}

// Lookup returns the case named name.
func Lookup(name string) (Case, bool) {
	for _, c := range Cases() {
		if c.Name == name {
			return c, true
		}
	}
	return Case{}, false
}

// pattern fills b with bytes determined by seed, so a receiver can check a
// payload without the sender shipping a copy.
func pattern(b []byte, seed uint32) []byte {
	x := seed*2654435761 + 1
	for i := range b {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		b[i] = byte(x)
	}
	return b
}

func checkPattern(b []byte, seed uint32) error {
	want := pattern(make([]byte, len(b)), seed)
	if !bytes.Equal(b, want) {
		i := 0
		for i < len(b) && b[i] == want[i] {
			i++
		}
		return fmt.Errorf("payload of %d bytes (seed %d) differs from byte %d on (crc %08x, want %08x)",
			len(b), seed, i, crc32.ChecksumIEEE(b), crc32.ChecksumIEEE(want))
	}
	return nil
}

func selfSend(ctx context.Context, c *commtune.Comm) error {
	me := c.Rank()
	for _, n := range []int{0, 1, 100, 64 << 10, 1 << 20} {
		out := pattern(make([]byte, n), uint32(n))
		in := make([]byte, n)
		rq, err := c.Irecv(in, me, 7)
		if err != nil {
			return err
		}
		if err := c.Send(ctx, out, me, 7); err != nil {
			return fmt.Errorf("self send of %d bytes: %w", n, err)
		}
		st, err := rq.Wait(ctx)
		if err != nil {
			return err
		}
		if st.Source != me || st.Tag != 7 || st.Count != n {
			return fmt.Errorf("self status %+v for %d bytes", st, n)
		}
		if err := checkPattern(in, uint32(n)); err != nil {
			return err
		}
	}
	// A blocking receive posted after an eager self-send finds it unexpected.
	if err := c.Send(ctx, []byte("hi"), me, 8); err != nil {
		return err
	}
	buf := make([]byte, 2)
	if _, err := c.Recv(ctx, buf, me, 8); err != nil || string(buf) != "hi" {
		return fmt.Errorf("self unexpected: %q %v", buf, err)
	}
	return nil
}

func zeroLength(ctx context.Context, c *commtune.Comm) error {
	if c.Rank() == 0 {
		for i := 0; i < 3; i++ {
			if err := c.Send(ctx, nil, 1, i); err != nil {
				return err
			}
		}
		return nil
	}
	if c.Rank() == 1 {
		for i := 0; i < 3; i++ {
			st, err := c.Recv(ctx, make([]byte, 10), 0, commtune.AnyTag)
			if err != nil {
				return err
			}
			if st.Count != 0 || st.Tag != i || st.Source != 0 {
				return fmt.Errorf("zero-length status %+v, want tag %d", st, i)
			}
		}
	}
	return nil
}

// ordering: messages from one sender with the same tag arrive in send
// order, also when the receiver posts late and when tags interleave.
func ordering(ctx context.Context, c *commtune.Comm) error {
	const n = 200
	if c.Rank() == 0 {
		for i := 0; i < n; i++ {
			b := []byte{byte(i), byte(i >> 8), byte(i % 3)}
			if err := c.Send(ctx, b, 1, i%3); err != nil {
				return err
			}
		}
		return c.Send(ctx, nil, 1, 99)
	}
	if c.Rank() != 1 {
		return nil
	}
	// Wait until everything is queued unexpected, then receive by tag: each
	// tag's messages must come in send order.
	if _, err := c.Probe(ctx, 0, 99); err != nil {
		return err
	}
	for tag := 2; tag >= 0; tag-- {
		for i := tag; i < n; i += 3 {
			b := make([]byte, 3)
			if _, err := c.Recv(ctx, b, 0, tag); err != nil {
				return err
			}
			if got := int(b[0]) | int(b[1])<<8; got != i {
				return fmt.Errorf("tag %d: got message %d, want %d", tag, got, i)
			}
		}
	}
	_, err := c.Recv(ctx, nil, 0, 99)
	return err
}

// orderingMixed interleaves eager and rendezvous messages on one tag: a
// small message sent after a large one must not overtake it.
func orderingMixed(ctx context.Context, c *commtune.Comm) error {
	sizes := []int{10, 300 << 10, 5, 200 << 10, 0, 1 << 20, 7, 70 << 10, 64 << 10, 1}
	if c.Rank() == 0 {
		var reqs []*commtune.Request
		for i, n := range sizes {
			q, err := c.Isend(pattern(make([]byte, n), uint32(i)), 1, 5)
			if err != nil {
				return err
			}
			reqs = append(reqs, q)
		}
		_, err := commtune.WaitAll(ctx, reqs...)
		return err
	}
	if c.Rank() != 1 {
		return nil
	}
	for i, n := range sizes {
		b := make([]byte, 1<<20)
		st, err := c.Recv(ctx, b, 0, 5)
		if err != nil {
			return err
		}
		if st.Count != n {
			return fmt.Errorf("message %d: %d bytes, want %d (overtaken)", i, st.Count, n)
		}
		if err := checkPattern(b[:n], uint32(i)); err != nil {
			return fmt.Errorf("message %d: %w", i, err)
		}
	}
	return nil
}

// anySourceAnyTag: rank 0 receives one message from every other rank with
// wildcards and gets each exactly once, with the right status.
func anySourceAnyTag(ctx context.Context, c *commtune.Comm) error {
	if c.Rank() != 0 {
		return c.Send(ctx, []byte{byte(c.Rank())}, 0, 10+c.Rank())
	}
	seen := make(map[int]bool)
	for i := 1; i < c.Size(); i++ {
		b := make([]byte, 1)
		st, err := c.Recv(ctx, b, commtune.AnySource, commtune.AnyTag)
		if err != nil {
			return err
		}
		if int(b[0]) != st.Source || st.Tag != 10+st.Source || st.Count != 1 || seen[st.Source] {
			return fmt.Errorf("wildcard receive got %v from status %+v (seen %v)", b, st, seen)
		}
		seen[st.Source] = true
	}
	// A specific-source wildcard-tag receive takes that source's message
	// (here rank 0's own), whatever its tag.
	if c.Size() > 2 {
		if err := c.Send(ctx, []byte{1}, 0, 3); err != nil {
			return err
		}
		b := make([]byte, 1)
		st, err := c.Recv(ctx, b, 0, commtune.AnyTag)
		if err != nil {
			return err
		}
		if st.Source != 0 || st.Tag != 3 || b[0] != 1 {
			return fmt.Errorf("source-0 wildcard-tag receive got %v with %+v", b, st)
		}
	}
	return nil
}

func probe(ctx context.Context, c *commtune.Comm) error {
	if c.Rank() == 0 {
		if err := c.Send(ctx, make([]byte, 123), 1, 4); err != nil {
			return err
		}
		return c.Send(ctx, make([]byte, 200<<10), 1, 5)
	}
	if c.Rank() != 1 {
		return nil
	}
	if _, ok, err := c.Iprobe(0, 6); ok || err != nil {
		return fmt.Errorf("iprobe for a message never sent: %v %v", ok, err)
	}
	st, err := c.Probe(ctx, commtune.AnySource, 5)
	if err != nil {
		return err
	}
	if st.Source != 0 || st.Tag != 5 || st.Count != 200<<10 {
		return fmt.Errorf("probe of rendezvous message: %+v", st)
	}
	st, ok, err := c.Iprobe(0, commtune.AnyTag)
	if err != nil || !ok || st.Tag != 4 || st.Count != 123 {
		return fmt.Errorf("iprobe any tag: %+v %v %v (want the earlier tag 4)", st, ok, err)
	}
	// Probing does not consume: the message is still there to receive.
	b := make([]byte, st.Count)
	if st2, err := c.Recv(ctx, b, st.Source, st.Tag); err != nil || st2.Count != 123 {
		return fmt.Errorf("receive after probe: %+v %v", st2, err)
	}
	b = make([]byte, 200<<10)
	_, err = c.Recv(ctx, b, 0, 5)
	return err
}

func truncation(ctx context.Context, c *commtune.Comm) error {
	sizes := []int{16, 100 << 10}
	if c.Rank() == 0 {
		for i, n := range sizes {
			if err := c.Send(ctx, pattern(make([]byte, n), uint32(i)), 1, i); err != nil {
				return fmt.Errorf("sender of truncated message: %w", err)
			}
		}
		return nil
	}
	if c.Rank() != 1 {
		return nil
	}
	for i, n := range sizes {
		b := make([]byte, n/2)
		st, err := c.Recv(ctx, b, 0, i)
		var te *commtune.TruncateError
		if !errors.Is(err, commtune.ErrTruncate) || !errors.As(err, &te) || te.MessageLen != n {
			return fmt.Errorf("%d-byte message into %d bytes: err %v", n, len(b), err)
		}
		if st.Count != n/2 {
			return fmt.Errorf("truncated count %d, want %d", st.Count, n/2)
		}
		if err := checkPattern(b, 0); err == nil && i > 0 {
			return fmt.Errorf("pattern check is not discriminating")
		}
		want := pattern(make([]byte, n), uint32(i))[:n/2]
		if !bytes.Equal(b, want) {
			return fmt.Errorf("truncated buffer does not hold the message's first bytes")
		}
	}
	return nil
}

func waitAllAny(ctx context.Context, c *commtune.Comm) error {
	const k = 8
	peer := 1 - c.Rank()
	if c.Rank() > 1 {
		return nil
	}
	var reqs []*commtune.Request
	bufs := make([][]byte, k)
	for i := 0; i < k; i++ {
		n := 1 << (3 * (i % 6)) // 1 B … 32 KiB, then again
		if i == k-1 {
			n = 300 << 10 // one rendezvous among them
		}
		bufs[i] = make([]byte, n)
		q, err := c.Irecv(bufs[i], peer, i)
		if err != nil {
			return err
		}
		reqs = append(reqs, q)
	}
	var sends []*commtune.Request
	for i := k - 1; i >= 0; i-- { // send in reverse tag order
		q, err := c.Isend(pattern(make([]byte, len(bufs[i])), uint32(i)), peer, i)
		if err != nil {
			return err
		}
		sends = append(sends, q)
	}
	got := 0
	pending := append([]*commtune.Request(nil), reqs[:k/2]...)
	for got < k/2 {
		i, st, err := commtune.WaitAny(ctx, pending...)
		if err != nil {
			return err
		}
		if i < 0 || st.Tag != i || st.Count != len(bufs[i]) {
			return fmt.Errorf("WaitAny index %d status %+v", i, st)
		}
		if err := checkPattern(bufs[i], uint32(i)); err != nil {
			return err
		}
		pending[i] = nil
		got++
	}
	if i, _, _ := commtune.WaitAny(ctx, pending...); i != -1 {
		return fmt.Errorf("WaitAny over nil requests returned %d", i)
	}
	sts, err := commtune.WaitAll(ctx, reqs[k/2:]...)
	if err != nil {
		return err
	}
	for j, st := range sts {
		i := k/2 + j
		if st.Tag != i || st.Count != len(bufs[i]) {
			return fmt.Errorf("WaitAll status %d: %+v", i, st)
		}
		if err := checkPattern(bufs[i], uint32(i)); err != nil {
			return err
		}
	}
	_, err = commtune.WaitAll(ctx, sends...)
	return err
}

// dupIsolation: a message on a duplicate never matches a receive on the
// original, even with wildcards, and vice versa.
func dupIsolation(ctx context.Context, c *commtune.Comm) error {
	d, err := c.Dup()
	if err != nil {
		return err
	}
	defer d.Close()
	if d.Size() != c.Size() || d.Rank() != c.Rank() {
		return fmt.Errorf("dup has rank %d of %d", d.Rank(), d.Size())
	}
	if c.Rank() == 0 {
		if err := d.Send(ctx, []byte("dup"), 1, 1); err != nil {
			return err
		}
		return c.Send(ctx, []byte("world"), 1, 1)
	}
	if c.Rank() != 1 {
		return nil
	}
	b := make([]byte, 8)
	st, err := c.Recv(ctx, b, commtune.AnySource, commtune.AnyTag)
	if err != nil || string(b[:st.Count]) != "world" {
		return fmt.Errorf("world wildcard receive got %q: %v", b[:st.Count], err)
	}
	st, err = d.Recv(ctx, b, commtune.AnySource, commtune.AnyTag)
	if err != nil || string(b[:st.Count]) != "dup" {
		return fmt.Errorf("dup receive got %q: %v", b[:st.Count], err)
	}
	return nil
}

// split: even and odd ranks form two communicators ordered by descending
// key; each does a ring exchange on its own and messages stay inside.
func split(ctx context.Context, c *commtune.Comm) error {
	color := c.Rank() % 2
	s, err := c.Split(ctx, color, -c.Rank())
	if err != nil {
		return err
	}
	defer s.Close()
	var members []int
	for r := color; r < c.Size(); r += 2 {
		members = append(members, r)
	}
	sort.Sort(sort.Reverse(sort.IntSlice(members)))
	if s.Size() != len(members) || c.WorldRank(c.Rank()) != s.WorldRank(s.Rank()) {
		return fmt.Errorf("split: size %d rank %d, want members %v", s.Size(), s.Rank(), members)
	}
	if members[s.Rank()] != c.Rank() {
		return fmt.Errorf("split: rank %d in new comm holds parent rank %d, want %d", s.Rank(), members[s.Rank()], c.Rank())
	}
	next, prev := (s.Rank()+1)%s.Size(), (s.Rank()-1+s.Size())%s.Size()
	out := []byte{byte(c.Rank())}
	in := make([]byte, 1)
	st, err := s.Sendrecv(ctx, out, next, 0, in, commtune.AnySource, commtune.AnyTag)
	if err != nil {
		return err
	}
	if st.Source != prev || int(in[0]) != members[prev] {
		return fmt.Errorf("split ring: got %d from %d, want %d from %d", in[0], st.Source, members[prev], prev)
	}
	// Undefined leaves a rank out.
	u, err := c.Split(ctx, map[bool]int{true: commtune.Undefined, false: 0}[c.Rank() == 0], 0)
	if err != nil {
		return err
	}
	if (c.Rank() == 0) != (u == nil) || (u != nil && u.Size() != c.Size()-1) {
		return fmt.Errorf("split with Undefined: %v", u)
	}
	return nil
}

// sizes moves 1 B … 16 MiB both ways between ranks 0 and 1.
func sizes(ctx context.Context, c *commtune.Comm) error {
	if c.Rank() > 1 {
		return nil
	}
	peer := 1 - c.Rank()
	for n := 1; n <= 16<<20; n *= 4 {
		for _, m := range []int{n, n + 3} {
			out := pattern(make([]byte, m), uint32(m))
			in := make([]byte, m)
			st, err := c.Sendrecv(ctx, out, peer, 1, in, peer, 1)
			if err != nil {
				return fmt.Errorf("%d bytes: %w", m, err)
			}
			if st.Count != m {
				return fmt.Errorf("%d bytes: count %d", m, st.Count)
			}
			if err := checkPattern(in, uint32(m)); err != nil {
				return err
			}
		}
	}
	return nil
}

// sendrecvRing passes a token around all ranks with Sendrecv.
func sendrecvRing(ctx context.Context, c *commtune.Comm) error {
	n := c.Size()
	next, prev := (c.Rank()+1)%n, (c.Rank()-1+n)%n
	tok := []int64{int64(c.Rank())}
	in := make([]int64, 1)
	for step := 0; step < n; step++ {
		if _, err := c.Sendrecv(ctx, commtune.Bytes(tok), next, 2, commtune.Bytes(in), prev, 2); err != nil {
			return err
		}
		tok[0] = in[0]
	}
	if tok[0] != int64(c.Rank()) {
		return fmt.Errorf("token after a full ring is %d, want %d", tok[0], c.Rank())
	}
	return nil
}

// cancel: an unmatched receive can be withdrawn; a blocking receive gives
// up when its context ends; a withdrawn receive never takes a message.
func cancel(ctx context.Context, c *commtune.Comm) error {
	if c.Rank() > 1 {
		return c.Barrier(ctx)
	}
	if c.Rank() == 1 {
		q, err := c.Irecv(make([]byte, 4), 0, 3)
		if err != nil {
			return err
		}
		if !q.Cancel() {
			return fmt.Errorf("cancel of an unmatched receive failed")
		}
		if _, err := q.Wait(ctx); !errors.Is(err, commtune.ErrCanceled) {
			return fmt.Errorf("cancelled receive: %v", err)
		}
		short, stop := context.WithCancel(ctx)
		stop()
		if _, err := c.Recv(short, make([]byte, 4), 0, 4); !errors.Is(err, context.Canceled) {
			return fmt.Errorf("receive with an ended context: %v", err)
		}
	}
	if err := c.Barrier(ctx); err != nil {
		return err
	}
	if c.Rank() == 0 {
		return c.Send(ctx, []byte("late"), 1, 3)
	}
	b := make([]byte, 4)
	if _, err := c.Recv(ctx, b, 0, 3); err != nil || string(b) != "late" {
		return fmt.Errorf("message after cancelled receives: %q %v", b, err)
	}
	return nil
}

func badArguments(ctx context.Context, c *commtune.Comm) error {
	n := c.Size()
	checks := []struct {
		what string
		err  error
	}{
		{"send to rank Size", c.Send(ctx, nil, n, 0)},
		{"send to rank -1", c.Send(ctx, nil, -1, 0)},
		{"send with tag -2", c.Send(ctx, nil, 0, -2)},
		{"receive from rank Size", func() error { _, err := c.Recv(ctx, nil, n, 0); return err }()},
		{"receive with tag -5", func() error { _, err := c.Recv(ctx, nil, 0, -5); return err }()},
		{"probe rank -7", func() error { _, _, err := c.Iprobe(-7, 0); return err }()},
	}
	for _, ch := range checks {
		if ch.err == nil {
			return fmt.Errorf("%s: no error", ch.what)
		}
	}
	if err := c.Barrier(ctx); err != nil {
		return err
	}
	return nil
}
