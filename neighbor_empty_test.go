package commtune_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/commtune/commtune"
)

// nbRanks is the number of ranks of the empty-list tests.
const nbRanks = 4

// nbEmptyGraph returns every rank's destinations and sources for a mode:
// without the mode, rank r sends to r+1, r+2 and r+1 again (a repeated
// neighbour, whose blocks match in list order); "no sources" drops every
// edge into rank 0, "no dests" every edge out of it, and "neither" both, so
// that rank 0 has an empty list while every other rank keeps a normal one.
// A rank's sources list its senders in rank order, each once per listing.
func nbEmptyGraph(mode string) (dests, sources [][]int) {
	dests = make([][]int, nbRanks)
	sources = make([][]int, nbRanks)
	for r := range nbRanks {
		for _, d := range []int{(r + 1) % nbRanks, (r + 2) % nbRanks, (r + 1) % nbRanks} {
			noIn := d == 0 && (mode == "no sources" || mode == "neither")
			noOut := r == 0 && (mode == "no dests" || mode == "neither")
			if !noIn && !noOut {
				dests[r] = append(dests[r], d)
			}
		}
	}
	for s := range nbRanks {
		for r := range nbRanks {
			for _, d := range dests[s] {
				if d == r {
					sources[r] = append(sources[r], s)
				}
			}
		}
	}
	return dests, sources
}

// nbOccurrence returns how many times list[i] appears before index i: the
// k-th listing of a peer, which pairs with the peer's k-th listing of us.
func nbOccurrence(list []int, i int) int {
	n := 0
	for _, v := range list[:i] {
		if v == list[i] {
			n++
		}
	}
	return n
}

// nbCell is the value sender puts in element e of its k-th block for dest:
// distinct for every sender, receiver, listing and element, so a block
// from the wrong peer or slot, or shifted by one, cannot pass.
func nbCell(sender, dest, k, e int) int64 {
	return int64(1_000_000 + sender*100_000 + dest*10_000 + k*1_000 + e)
}

// nbUntouched is what recv[i] of rank r holds before the call: distinct from
// every nbCell and from every other rank's and index's.
func nbUntouched(r, i int) int64 { return int64(-(r*1_000 + i + 1)) }

// nbBlockLen is the length of an Alltoallv block from sender to its k-th
// listing of dest; it is zero for some blocks.
func nbBlockLen(sender, dest, k int) int { return (sender + 2*dest + k) % 3 }

// nbGatherLen is the length of what sender contributes to NeighborAllgatherv.
func nbGatherLen(sender int) int { return 1 + sender%3 }

// nbCase runs one call on one rank: it fills the buffers,
// exchanges and returns the receive buffer with the cells it expects.
type nbCase func(ctx context.Context, nb *commtune.Neighborhood, me int, nonblocking bool) (got, want []int64, err error)

// nbRun calls a blocking call, or its I… form and Wait.
func nbRun(ctx context.Context, nonblocking bool, start func() (*commtune.NeighborRequest, error), call func() error) error {
	if !nonblocking {
		return call()
	}
	q, err := start()
	if err != nil {
		return err
	}
	return q.Wait(ctx)
}

// nbRecvBuf returns a receive buffer of n cells, each holding nbUntouched.
func nbRecvBuf(me, n int) []int64 {
	b := make([]int64, n)
	for i := range b {
		b[i] = nbUntouched(me, i)
	}
	return b
}

const nbBlock = 3 // the Alltoall and Allgather block, in elements

// nbCalls is every neighbourhood call, each checked by TestNeighborEmptyLists.
var nbCalls = []struct {
	name string
	run  nbCase
}{
	{"NeighborAllgather", nbAllgatherCase(false)},
	// A rank with no destinations may leave send empty: the block size
	// then comes from its receive buffer.
	{"NeighborAllgather/empty send", nbAllgatherCase(true)},
	{"NeighborAllgatherv", func(ctx context.Context, nb *commtune.Neighborhood, me int, nonblocking bool) ([]int64, []int64, error) {
		send := make([]int64, nbGatherLen(me))
		for e := range send {
			send[e] = nbCell(me, 0, 0, e) // the same block to every destination
		}
		srcs := nb.Sources()
		counts, displs := make([]int, len(srcs)), make([]int, len(srcs))
		at := 1 // a gap before and between blocks, which must stay nbUntouched
		for i, s := range srcs {
			counts[i], displs[i] = nbGatherLen(s), at
			at += counts[i] + 1
		}
		recv := nbRecvBuf(me, at)
		want := slices.Clone(recv)
		for i, s := range srcs {
			for e := range counts[i] {
				want[displs[i]+e] = nbCell(s, 0, 0, e)
			}
		}
		err := nbRun(ctx, nonblocking,
			func() (*commtune.NeighborRequest, error) {
				return commtune.IneighborAllgatherv(nb, send, recv, counts, displs)
			},
			func() error { return commtune.NeighborAllgatherv(ctx, nb, send, recv, counts, displs) })
		return recv, want, err
	}},
	{"NeighborAlltoall", func(ctx context.Context, nb *commtune.Neighborhood, me int, nonblocking bool) ([]int64, []int64, error) {
		dsts, srcs := nb.Dests(), nb.Sources()
		send := make([]int64, nbBlock*len(dsts))
		for j, d := range dsts {
			for e := range nbBlock {
				send[j*nbBlock+e] = nbCell(me, d, nbOccurrence(dsts, j), e)
			}
		}
		recv := nbRecvBuf(me, nbBlock*len(srcs))
		want := slices.Clone(recv)
		for i, s := range srcs {
			for e := range nbBlock {
				want[i*nbBlock+e] = nbCell(s, me, nbOccurrence(srcs, i), e)
			}
		}
		err := nbRun(ctx, nonblocking,
			func() (*commtune.NeighborRequest, error) { return commtune.IneighborAlltoall(nb, send, recv) },
			func() error { return commtune.NeighborAlltoall(ctx, nb, send, recv) })
		return recv, want, err
	}},
	{"NeighborAlltoallv", func(ctx context.Context, nb *commtune.Neighborhood, me int, nonblocking bool) ([]int64, []int64, error) {
		dsts, srcs := nb.Dests(), nb.Sources()
		// Send blocks in reverse order, so displacements matter.
		sc, sd := make([]int, len(dsts)), make([]int, len(dsts))
		total := 0
		for j, d := range dsts {
			sc[j] = nbBlockLen(me, d, nbOccurrence(dsts, j))
			total += sc[j]
		}
		send := make([]int64, total)
		at := total
		for j, d := range dsts {
			at -= sc[j]
			sd[j] = at
			for e := range sc[j] {
				send[at+e] = nbCell(me, d, nbOccurrence(dsts, j), e)
			}
		}
		rc, rd := make([]int, len(srcs)), make([]int, len(srcs))
		at = 1
		for i, s := range srcs {
			rc[i], rd[i] = nbBlockLen(s, me, nbOccurrence(srcs, i)), at
			at += rc[i] + 1
		}
		recv := nbRecvBuf(me, at)
		want := slices.Clone(recv)
		for i, s := range srcs {
			for e := range rc[i] {
				want[rd[i]+e] = nbCell(s, me, nbOccurrence(srcs, i), e)
			}
		}
		err := nbRun(ctx, nonblocking,
			func() (*commtune.NeighborRequest, error) {
				return commtune.IneighborAlltoallv(nb, send, sc, sd, recv, rc, rd)
			},
			func() error { return commtune.NeighborAlltoallv(ctx, nb, send, sc, sd, recv, rc, rd) })
		return recv, want, err
	}},
}

// nbAllgatherCase is NeighborAllgather's case; with emptySend a rank with no
// destinations passes an empty send buffer.
func nbAllgatherCase(emptySend bool) nbCase {
	return func(ctx context.Context, nb *commtune.Neighborhood, me int, nonblocking bool) ([]int64, []int64, error) {
		send := make([]int64, nbBlock)
		for e := range send {
			send[e] = nbCell(me, 0, 0, e)
		}
		if emptySend && len(nb.Dests()) == 0 {
			send = nil
		}
		srcs := nb.Sources()
		recv := nbRecvBuf(me, nbBlock*len(srcs))
		want := slices.Clone(recv)
		for i, s := range srcs {
			for e := range nbBlock {
				want[i*nbBlock+e] = nbCell(s, 0, 0, e)
			}
		}
		err := nbRun(ctx, nonblocking,
			func() (*commtune.NeighborRequest, error) { return commtune.IneighborAllgather(nb, send, recv) },
			func() error { return commtune.NeighborAllgather(ctx, nb, send, recv) })
		return recv, want, err
	}
}

// TestNeighborEmptyLists runs every neighbourhood call with rank 0 having
// no sources, no destinations or neither while the other ranks have normal
// lists, and checks every nbCell of every rank's receive buffer.
func TestNeighborEmptyLists(t *testing.T) {
	for _, call := range nbCalls {
		for _, mode := range []string{"both", "no sources", "no dests", "neither"} {
			for _, nonblocking := range []bool{false, true} {
				name := fmt.Sprintf("%s/%s/blocking", call.name, mode)
				if nonblocking {
					name = fmt.Sprintf("%s/%s/nonblocking", call.name, mode)
				}
				t.Run(name, func(t *testing.T) {
					dests, sources := nbEmptyGraph(mode)
					err := commtune.Local(nbRanks, func(c *commtune.Comm) error {
						ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
						defer cancel()
						me := c.Rank()
						nb, err := c.Neighborhood(sources[me], dests[me])
						if err != nil {
							return err
						}
						defer nb.Comm().Close()
						got, want, err := call.run(ctx, nb, me, nonblocking)
						if err != nil {
							return fmt.Errorf("sources %v, dests %v: %w", sources[me], dests[me], err)
						}
						if !slices.Equal(got, want) {
							return fmt.Errorf("sources %v, dests %v: received %v, want %v", sources[me], dests[me], got, want)
						}
						return nil
					})
					if err != nil {
						t.Fatal(err)
					}
				})
			}
		}
	}
}

// TestNeighborEmptyListErrors checks that buffers that do not fit the
// lists are refused with a clear error, by the blocking and the I… form,
// before anything is sent: rank 0 makes the bad call alone, then both
// ranks make a good exchange, which a message sent by the bad call would
// corrupt or fail.
func TestNeighborEmptyListErrors(t *testing.T) {
	type lists struct{ sources, dests []int } // rank 0's; rank 1's mirror them
	none := lists{}
	noDests := lists{sources: []int{1, 1}}
	noSources := lists{dests: []int{1, 1}}
	both := lists{sources: []int{1, 1}, dests: []int{1, 1}}
	n := func(k int) []int64 { return make([]int64, k) }
	for _, tc := range []struct {
		name  string
		l     lists
		start func(nb *commtune.Neighborhood) (*commtune.NeighborRequest, error)
		call  func(ctx context.Context, nb *commtune.Neighborhood) error
		want  string
	}{
		{"Alltoall no dests, send not empty", noDests,
			func(nb *commtune.Neighborhood) (*commtune.NeighborRequest, error) {
				return commtune.IneighborAlltoall(nb, n(3), n(6))
			},
			func(ctx context.Context, nb *commtune.Neighborhood) error {
				return commtune.NeighborAlltoall(ctx, nb, n(3), n(6))
			}, "send of 3 elements for 0 destinations"},
		{"Alltoall no dests, receive not whole blocks", noDests,
			func(nb *commtune.Neighborhood) (*commtune.NeighborRequest, error) {
				return commtune.IneighborAlltoall(nb, nil, n(7))
			},
			func(ctx context.Context, nb *commtune.Neighborhood) error {
				return commtune.NeighborAlltoall(ctx, nb, nil, n(7))
			}, "receive of 7 elements is not a whole number of blocks for 2 sources"},
		{"Alltoall no sources, receive not empty", noSources,
			func(nb *commtune.Neighborhood) (*commtune.NeighborRequest, error) {
				return commtune.IneighborAlltoall(nb, n(6), n(1))
			},
			func(ctx context.Context, nb *commtune.Neighborhood) error {
				return commtune.NeighborAlltoall(ctx, nb, n(6), n(1))
			}, "receive of 1 elements for 0 sources"},
		{"Alltoall no sources, send not whole blocks", noSources,
			func(nb *commtune.Neighborhood) (*commtune.NeighborRequest, error) {
				return commtune.IneighborAlltoall(nb, n(5), nil)
			},
			func(ctx context.Context, nb *commtune.Neighborhood) error {
				return commtune.NeighborAlltoall(ctx, nb, n(5), nil)
			}, "send of 5 elements is not a whole number of blocks for 2 destinations"},
		{"Alltoall neither, send not empty", none,
			func(nb *commtune.Neighborhood) (*commtune.NeighborRequest, error) {
				return commtune.IneighborAlltoall(nb, n(1), nil)
			},
			func(ctx context.Context, nb *commtune.Neighborhood) error {
				return commtune.NeighborAlltoall(ctx, nb, n(1), nil)
			}, "send of 1 elements for 0 destinations"},
		{"Alltoall neither, receive not empty", none,
			func(nb *commtune.Neighborhood) (*commtune.NeighborRequest, error) {
				return commtune.IneighborAlltoall(nb, nil, n(2))
			},
			func(ctx context.Context, nb *commtune.Neighborhood) error {
				return commtune.NeighborAlltoall(ctx, nb, nil, n(2))
			}, "receive of 2 elements for 0 sources"},
		{"Alltoall unequal blocks", both,
			func(nb *commtune.Neighborhood) (*commtune.NeighborRequest, error) {
				return commtune.IneighborAlltoall(nb, n(4), n(6))
			},
			func(ctx context.Context, nb *commtune.Neighborhood) error {
				return commtune.NeighborAlltoall(ctx, nb, n(4), n(6))
			}, "want equal blocks"},
		{"Alltoall send not whole blocks", both,
			func(nb *commtune.Neighborhood) (*commtune.NeighborRequest, error) {
				return commtune.IneighborAlltoall(nb, n(5), n(4))
			},
			func(ctx context.Context, nb *commtune.Neighborhood) error {
				return commtune.NeighborAlltoall(ctx, nb, n(5), n(4))
			}, "send of 5 elements is not a whole number of blocks for 2 destinations"},
		{"Allgather no dests, empty send, receive not whole blocks", noDests,
			func(nb *commtune.Neighborhood) (*commtune.NeighborRequest, error) {
				return commtune.IneighborAllgather(nb, nil, n(5))
			},
			func(ctx context.Context, nb *commtune.Neighborhood) error {
				return commtune.NeighborAllgather(ctx, nb, nil, n(5))
			}, "receive of 5 elements is not a whole number of blocks for 2 sources"},
		{"Allgather no dests, receive not two blocks of send", noDests,
			func(nb *commtune.Neighborhood) (*commtune.NeighborRequest, error) {
				return commtune.IneighborAllgather(nb, n(2), n(6))
			},
			func(ctx context.Context, nb *commtune.Neighborhood) error {
				return commtune.NeighborAllgather(ctx, nb, n(2), n(6))
			}, "receive of 6 elements for 2 sources of 2"},
		{"Allgather no sources, receive not empty", noSources,
			func(nb *commtune.Neighborhood) (*commtune.NeighborRequest, error) {
				return commtune.IneighborAllgather(nb, n(2), n(2))
			},
			func(ctx context.Context, nb *commtune.Neighborhood) error {
				return commtune.NeighborAllgather(ctx, nb, n(2), n(2))
			}, "receive of 2 elements for 0 sources"},
		{"Allgather neither, receive not empty", none,
			func(nb *commtune.Neighborhood) (*commtune.NeighborRequest, error) {
				return commtune.IneighborAllgather(nb, nil, n(1))
			},
			func(ctx context.Context, nb *commtune.Neighborhood) error {
				return commtune.NeighborAllgather(ctx, nb, nil, n(1))
			}, "receive of 1 elements for 0 sources"},
		{"Allgatherv no sources, counts given", noSources,
			func(nb *commtune.Neighborhood) (*commtune.NeighborRequest, error) {
				return commtune.IneighborAllgatherv(nb, n(1), n(1), []int{1}, []int{0})
			},
			func(ctx context.Context, nb *commtune.Neighborhood) error {
				return commtune.NeighborAllgatherv(ctx, nb, n(1), n(1), []int{1}, []int{0})
			}, "1 counts and 1 displacements for 0 neighbours"},
		{"Alltoallv no dests, send counts given", noDests,
			func(nb *commtune.Neighborhood) (*commtune.NeighborRequest, error) {
				return commtune.IneighborAlltoallv(nb, n(1), []int{1}, []int{0}, n(2), []int{1, 1}, []int{0, 1})
			},
			func(ctx context.Context, nb *commtune.Neighborhood) error {
				return commtune.NeighborAlltoallv(ctx, nb, n(1), []int{1}, []int{0}, n(2), []int{1, 1}, []int{0, 1})
			}, "send: 1 counts and 1 displacements for 0 neighbours"},
		{"Alltoallv neither, receive counts given", none,
			func(nb *commtune.Neighborhood) (*commtune.NeighborRequest, error) {
				return commtune.IneighborAlltoallv(nb, nil, nil, nil, n(1), []int{1}, []int{0})
			},
			func(ctx context.Context, nb *commtune.Neighborhood) error {
				return commtune.NeighborAlltoallv(ctx, nb, nil, nil, nil, n(1), []int{1}, []int{0})
			}, "receive: 1 counts and 1 displacements for 0 neighbours"},
	} {
		for _, nonblocking := range []bool{false, true} {
			name := tc.name + "/blocking"
			if nonblocking {
				name = tc.name + "/nonblocking"
			}
			t.Run(name, func(t *testing.T) {
				err := commtune.Local(2, func(c *commtune.Comm) error {
					ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
					defer cancel()
					me := c.Rank()
					// Rank 1 receives from rank 0 once per listing of 1 in
					// rank 0's destinations, and sends to it once per
					// listing in its sources.
					srcs, dsts := tc.l.sources, tc.l.dests
					if me == 1 {
						srcs, dsts = nbRepeat(0, len(tc.l.dests)), nbRepeat(0, len(tc.l.sources))
					}
					nb, err := c.Neighborhood(srcs, dsts)
					if err != nil {
						return err
					}
					defer nb.Comm().Close()
					if me == 0 {
						var err error
						if nonblocking {
							var q *commtune.NeighborRequest
							q, err = tc.start(nb)
							if q != nil {
								return fmt.Errorf("a request, and the error %v", err)
							}
						} else {
							err = tc.call(ctx, nb)
						}
						if err == nil || !strings.Contains(err.Error(), tc.want) {
							return fmt.Errorf("error %v, want one with %q", err, tc.want)
						}
					}
					// The good exchange: one element per block.
					send := make([]int64, len(dsts))
					for j := range send {
						send[j] = nbCell(me, 1-me, j, 0)
					}
					recv := nbRecvBuf(me, len(srcs))
					if err := commtune.NeighborAlltoall(ctx, nb, send, recv); err != nil {
						return fmt.Errorf("the exchange after the error: %w", err)
					}
					for i := range recv {
						if want := nbCell(1-me, me, i, 0); recv[i] != want {
							return fmt.Errorf("after the error, block %d holds %d, want %d", i, recv[i], want)
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
}

// nbRepeat returns k copies of r.
func nbRepeat(r, k int) []int {
	if k == 0 {
		return nil
	}
	return slices.Repeat([]int{r}, k)
}
