package conformance

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"

	"github.com/commtune/commtune"
	"github.com/commtune/commtune/internal/testenv"
)

// persistentStartsEnv overrides how many times the persistent case starts
// each small request.
const persistentStartsEnv = "COMMTUNE_PERSISTENT_STARTS"

// persistent checks persistent requests: a ring of persistent sends and
// receives, eager and rendezvous, and persistent collectives of every
// kind, small (which the node segment carries between ranks of one node)
// and large, each started over and over on the buffers bound at init with
// rank-, start- and cell-specific values checked at every start, and
// sentinels in every cell a start must not write. Then all of them are
// started together and waited in the reverse order.
//
// Starts per request: 10 000 small and 1 000 large on goroutine ranks, a
// tenth of that over processes (up to 16 of them share two processors in
// the suite's jobs), and a tenth again under the race detector;
// COMMTUNE_PERSISTENT_STARTS sets the small count everywhere (the large
// one is a tenth of it), for the acceptance run over processes.
func persistent(ctx context.Context, c *commtune.Comm) error {
	small, large := 10000, 1000
	if !onGoroutines(c) {
		small, large = 1000, 100
	}
	if testenv.Race {
		small, large = small/10, large/10
	}
	if v := os.Getenv(persistentStartsEnv); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return fmt.Errorf("%s=%q: want a positive count", persistentStartsEnv, v)
		}
		small, large = n, max(n/10, 1)
	}
	reqs := persistentCases(c)
	for _, pc := range reqs {
		starts := small
		if pc.large {
			starts = large
		}
		p, err := pc.init()
		if err != nil {
			return fmt.Errorf("%s: init: %w", pc.name, err)
		}
		for it := range int64(starts) {
			if err := pc.fill(it); err != nil {
				return fmt.Errorf("%s: start %d: %w", pc.name, it, err)
			}
			if err := p.Start(); err != nil {
				return fmt.Errorf("%s: start %d: %w", pc.name, it, err)
			}
			if it%2 == 0 {
				_, err = p.Wait(ctx)
			} else {
				err = testThenWait(ctx, p)
			}
			if err != nil {
				return fmt.Errorf("%s: start %d: %w", pc.name, it, err)
			}
			if err := pc.check(it); err != nil {
				return fmt.Errorf("%s: start %d: %w", pc.name, it, err)
			}
		}
		pc.p = p
	}
	// All at once, in the order of the list on every rank, waited in the
	// reverse order.
	ps := make([]*commtune.Prequest, len(reqs))
	for i, pc := range reqs {
		ps[i] = pc.p
	}
	for it := range int64(large) {
		it += 1 << 20 // values no start above used
		for _, pc := range reqs {
			if err := pc.fill(it); err != nil {
				return fmt.Errorf("all at once: %s: start %d: %w", pc.name, it, err)
			}
		}
		if err := commtune.StartAll(ps...); err != nil {
			return fmt.Errorf("all at once, start %d: %w", it, err)
		}
		for i := len(reqs) - 1; i >= 0; i-- {
			if _, err := ps[i].Wait(ctx); err != nil {
				return fmt.Errorf("all at once: %s: start %d: %w", reqs[i].name, it, err)
			}
		}
		for _, pc := range reqs {
			if err := pc.check(it); err != nil {
				return fmt.Errorf("all at once: %s: start %d: %w", pc.name, it, err)
			}
		}
	}
	for _, pc := range reqs {
		err := pc.p.Free()
		if err == nil && pc.free != nil {
			err = pc.free()
		}
		if err != nil {
			return fmt.Errorf("%s: %w", pc.name, err)
		}
	}
	return nil
}

// onGoroutines reports whether c's ranks are goroutines of this process.
func onGoroutines(c *commtune.Comm) bool {
	for r := range c.Size() {
		if t := c.Transport(r); t != "self" && t != "inproc" {
			return false
		}
	}
	return true
}

// testThenWait completes p by Test if a few Tests see it complete, else
// by Wait: a loop of Tests alone would hold a processor the peers may
// need (processes outnumber processors in the suite's larger jobs).
func testThenWait(ctx context.Context, p *commtune.Prequest) error {
	for range 4 {
		_, done, err := p.Test()
		if done || err != nil {
			return err
		}
		runtime.Gosched()
	}
	_, err := p.Wait(ctx)
	return err
}

// persistentCase is one persistent request of the case: init makes it;
// fill writes start it's input and sentinels, check checks its result;
// free frees what else init made.
type persistentCase struct {
	name  string
	large bool
	init  func() (*commtune.Prequest, error)
	fill  func(it int64) error
	check func(it int64) error
	free  func() error
	p     *commtune.Prequest
}

// pval is rank r's value of cell k at start it; psent a sentinel no
// start writes.
func pval(it int64, r, k int) int64  { return it*1_000_003 + int64(r)*1009 + int64(k)*7 + 1 }
func psent(it int64, r, k int) int64 { return -pval(it, r, k) - 3 }

func fillVals(s []int64, it int64, r, from int) {
	for k := range s {
		s[k] = pval(it, r, from+k)
	}
}

func fillSent(s []int64, it int64, r int) {
	for k := range s {
		s[k] = psent(it, r, k)
	}
}

// expect checks every cell of got against want.
func expect(what string, got []int64, want func(k int) int64) error {
	for k, v := range got {
		if w := want(k); v != w {
			return fmt.Errorf("%s: cell %d of %d is %d, want %d", what, k, len(got), v, w)
		}
	}
	return nil
}

// sumVals is Σ pval(it, r, k) over ranks lo to hi-1.
func sumVals(it int64, lo, hi, k int) int64 {
	var s int64
	for r := lo; r < hi; r++ {
		s += pval(it, r, k)
	}
	return s
}

// persistentCases returns the requests the case makes on c.
func persistentCases(c *commtune.Comm) []*persistentCase {
	n, me := c.Size(), c.Rank()
	right, left := (me+1)%n, (me+n-1)%n
	var cs []*persistentCase
	add := func(pc *persistentCase) { cs = append(cs, pc) }

	// A ring of sends and receives, small (eager) and 64 KiB (rendezvous).
	for _, size := range []int{40, 64 << 10} {
		out, in := make([]byte, size), make([]byte, size)
		var send, recv *commtune.Prequest
		seed := func(it int64, r int) uint32 { return uint32(it*131 + int64(r)*7 + int64(size)) }
		add(&persistentCase{name: fmt.Sprintf("ring of %d bytes", size), large: size > 1024,
			init: func() (*commtune.Prequest, error) {
				var err error
				if recv, err = c.RecvInit(in, left, 5); err != nil {
					return nil, err
				}
				if send, err = c.SendInit(out, right, 5); err != nil {
					return nil, err
				}
				return recv, nil
			},
			fill: func(it int64) error {
				pattern(out, seed(it, me))
				clear(in)
				// The send starts with the receive: check waits for it.
				return send.Start()
			},
			check: func(it int64) error {
				if _, err := send.Wait(context.Background()); err != nil {
					return err
				}
				return checkPattern(in, seed(it, left))
			},
			free: func() error { return send.Free() },
		})
	}

	// Small collectives.
	const e = 3
	{
		in, out := make([]int64, e), make([]int64, e)
		add(&persistentCase{name: "allreduce",
			init: func() (*commtune.Prequest, error) { return commtune.AllreduceInit(c, in, out, commtune.Sum) },
			fill: func(it int64) error { fillVals(in, it, me, 0); fillSent(out, it, me); return nil },
			check: func(it int64) error {
				return expect("allreduce", out, func(k int) int64 { return sumVals(it, 0, n, k) })
			},
		})
	}
	{
		buf := make([]int64, e)
		add(&persistentCase{name: "allreduce in place",
			init: func() (*commtune.Prequest, error) { return commtune.AllreduceInit(c, buf, buf, commtune.Sum) },
			fill: func(it int64) error { fillVals(buf, it, me, 0); return nil },
			check: func(it int64) error {
				return expect("in place", buf, func(k int) int64 { return sumVals(it, 0, n, k) })
			},
		})
	}
	{
		root, buf := n-1, make([]int64, e)
		add(&persistentCase{name: "bcast",
			init: func() (*commtune.Prequest, error) { return commtune.BcastInit(c, buf, root) },
			fill: func(it int64) error {
				if me == root {
					fillVals(buf, it, root, 0)
				} else {
					fillSent(buf, it, me)
				}
				return nil
			},
			check: func(it int64) error { return expect("bcast", buf, func(k int) int64 { return pval(it, root, k) }) },
		})
	}
	{
		root, in, out := n/2, make([]int64, e), make([]int64, e)
		add(&persistentCase{name: "reduce",
			init: func() (*commtune.Prequest, error) { return commtune.ReduceInit(c, in, out, commtune.Sum, root) },
			fill: func(it int64) error { fillVals(in, it, me, 0); fillSent(out, it, me); return nil },
			check: func(it int64) error {
				if me != root {
					return expect("reduce, not the root", out, func(k int) int64 { return psent(it, me, k) })
				}
				return expect("reduce", out, func(k int) int64 { return sumVals(it, 0, n, k) })
			},
		})
	}
	for _, exclusive := range []bool{false, true} {
		in, out := make([]int64, e), make([]int64, e)
		name := "scan"
		if exclusive {
			name = "exscan"
		}
		add(&persistentCase{name: name,
			init: func() (*commtune.Prequest, error) {
				if exclusive {
					return commtune.ExscanInit(c, in, out, commtune.Sum)
				}
				return commtune.ScanInit(c, in, out, commtune.Sum)
			},
			fill: func(it int64) error { fillVals(in, it, me, 0); fillSent(out, it, me); return nil },
			check: func(it int64) error {
				last := me + 1
				if exclusive {
					last = me
				}
				if last == 0 {
					return expect(name+", rank 0", out, func(k int) int64 { return psent(it, me, k) })
				}
				return expect(name, out, func(k int) int64 { return sumVals(it, 0, last, k) })
			},
		})
	}
	{
		in, out := make([]int64, 2), make([]int64, 2*n)
		add(&persistentCase{name: "allgather",
			init: func() (*commtune.Prequest, error) { return commtune.AllgatherInit(c, in, out) },
			fill: func(it int64) error { fillVals(in, it, me, 0); fillSent(out, it, me); return nil },
			check: func(it int64) error {
				return expect("allgather", out, func(k int) int64 { return pval(it, k/2, k%2) })
			},
		})
	}
	{
		root, in, out := 0, make([]int64, 2), make([]int64, 2*n)
		add(&persistentCase{name: "gather",
			init: func() (*commtune.Prequest, error) { return commtune.GatherInit(c, in, out, root) },
			fill: func(it int64) error { fillVals(in, it, me, 0); fillSent(out, it, me); return nil },
			check: func(it int64) error {
				if me != root {
					return expect("gather, not the root", out, func(k int) int64 { return psent(it, me, k) })
				}
				return expect("gather", out, func(k int) int64 { return pval(it, k/2, k%2) })
			},
		})
	}
	{
		root, in, out := n-1, make([]int64, 2*n), make([]int64, 2)
		add(&persistentCase{name: "scatter",
			init: func() (*commtune.Prequest, error) { return commtune.ScatterInit(c, in, out, root) },
			fill: func(it int64) error {
				for r := range n {
					fillVals(in[2*r:2*r+2], it, r, 0)
				}
				fillSent(out, it, me)
				return nil
			},
			check: func(it int64) error { return expect("scatter", out, func(k int) int64 { return pval(it, me, k) }) },
		})
	}
	add(&persistentCase{name: "barrier",
		init:  func() (*commtune.Prequest, error) { return c.BarrierInit() },
		fill:  func(int64) error { return nil },
		check: func(int64) error { return nil },
	})

	// Large collectives: beyond a segment's slot.
	const big = 4096
	{
		in, out := make([]int64, big), make([]int64, big)
		add(&persistentCase{name: "large allreduce", large: true,
			init: func() (*commtune.Prequest, error) { return commtune.AllreduceInit(c, in, out, commtune.Sum) },
			fill: func(it int64) error { fillVals(in, it, me, 0); fillSent(out, it, me); return nil },
			check: func(it int64) error {
				return expect("allreduce", out, func(k int) int64 { return sumVals(it, 0, n, k) })
			},
		})
	}
	{
		b := big / 8
		in, out := make([]int64, b*n), make([]int64, b*n)
		add(&persistentCase{name: "alltoall", large: true,
			init: func() (*commtune.Prequest, error) { return commtune.AlltoallInit(c, in, out) },
			fill: func(it int64) error {
				for d := range n {
					fillVals(in[b*d:b*(d+1)], it, me*n+d, 0)
				}
				fillSent(out, it, me)
				return nil
			},
			check: func(it int64) error {
				return expect("alltoall", out, func(k int) int64 { return pval(it, (k/b)*n+me, k%b) })
			},
		})
	}
	{
		counts, offs := make([]int, n), make([]int, n)
		total := 0
		for r := range n {
			counts[r], offs[r] = 300+17*r, total
			total += counts[r]
		}
		in, out := make([]int64, total), make([]int64, counts[me])
		add(&persistentCase{name: "reducescatter", large: true,
			init: func() (*commtune.Prequest, error) {
				return commtune.ReduceScatterInit(c, in, out, counts, commtune.Sum)
			},
			fill: func(it int64) error { fillVals(in, it, me, 0); fillSent(out, it, me); return nil },
			check: func(it int64) error {
				return expect("reducescatter", out, func(k int) int64 { return sumVals(it, 0, n, offs[me]+k) })
			},
		})
	}
	{
		counts, displs := make([]int, n), make([]int, n)
		total := 0
		for r := range n {
			counts[r], displs[r] = 200+3*r, total+r%2 // gaps between blocks
			total = displs[r] + counts[r]
		}
		in, out := make([]int64, counts[me]), make([]int64, total)
		add(&persistentCase{name: "allgatherv", large: true,
			init: func() (*commtune.Prequest, error) {
				return commtune.AllgathervInit(c, in, out, counts, displs)
			},
			fill: func(it int64) error { fillVals(in, it, me, 0); fillSent(out, it, me); return nil },
			check: func(it int64) error {
				return expect("allgatherv", out, func(k int) int64 {
					for r := range n {
						if k >= displs[r] && k < displs[r]+counts[r] {
							return pval(it, r, k-displs[r])
						}
					}
					return psent(it, me, k) // a gap: never written
				})
			},
		})
	}
	{
		cnt := func(s, d int) int { return 100 + (s+2*d)%3 }
		sc, sd, rc, rd := make([]int, n), make([]int, n), make([]int, n), make([]int, n)
		st, rt := 0, 0
		for d := range n {
			sc[d], sd[d], rc[d], rd[d] = cnt(me, d), st, cnt(d, me), rt
			st += sc[d]
			rt += rc[d]
		}
		in, out := make([]int64, st), make([]int64, rt)
		add(&persistentCase{name: "alltoallv", large: true,
			init: func() (*commtune.Prequest, error) {
				return commtune.AlltoallvInit(c, in, sc, sd, out, rc, rd)
			},
			fill: func(it int64) error {
				for d := range n {
					fillVals(in[sd[d]:sd[d]+sc[d]], it, me*n+d, 0)
				}
				fillSent(out, it, me)
				return nil
			},
			check: func(it int64) error {
				return expect("alltoallv", out, func(k int) int64 {
					s := n - 1
					for s > 0 && k < rd[s] {
						s--
					}
					return pval(it, s*n+me, k-rd[s])
				})
			},
		})
	}
	return cs
}
