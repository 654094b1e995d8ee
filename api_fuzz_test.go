package commtune

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/commtune/commtune/internal/fuzzseed"
)

// Bounds of FuzzAPI: each call gets fuzzDeadline and must return within
// fuzzDeadline+fuzzSlack (a transfer already moving finishes first).
const (
	fuzzDeadline = 30 * time.Millisecond
	fuzzSlack    = 2 * time.Second
	fuzzOps      = 6
)

// fuzzTags and fuzzRanks are the values a program's bytes pick from:
// valid ones, the wildcards, and the edges just outside.
var (
	fuzzTags  = []int{0, 1, 7, TagUB, AnyTag, -2, TagUB + 1, 1<<32 + 5, math.MaxInt64, math.MinInt64}
	fuzzRanks = []int{0, 1, 2, AnySource, -2, 3, math.MaxInt32, math.MinInt64}
)

// fuzzProgram reads calls from bytes: each is 6 bytes (call, communicator,
// rank, tag, size, flags); missing bytes read as zero.
type fuzzProgram []byte

func (p fuzzProgram) at(i int) int {
	if i < len(p) {
		return int(p[i])
	}
	return 0
}

// FuzzAPI runs programs of public calls with arbitrary ranks, tags, sizes,
// counts, buffers and communicators (the world, a Dup, a nil one and a
// closed one) on two goroutine ranks, each rank running the same program.
// No call may panic, and every call must return within its context's
// deadline and a slack: arguments are checked, mismatched collectives end.
func FuzzAPI(f *testing.F) {
	f.Fuzz(func(t *testing.T, prog []byte) {
		if len(prog) > fuzzOps*6 {
			prog = prog[:fuzzOps*6]
		}
		err := Local(2, func(c *Comm) error { return runFuzzProgram(c, fuzzProgram(prog)) })
		if err != nil && (strings.Contains(err.Error(), "panic:") || strings.Contains(err.Error(), "took")) {
			t.Fatalf("program %x: %v", prog, err)
		}
	})
}

func runFuzzProgram(world *Comm, p fuzzProgram) error {
	dup, err := world.Dup()
	if err != nil {
		return err
	}
	closed, err := world.Dup()
	if err != nil {
		return err
	}
	closed.Close()
	comms := []*Comm{world, dup, nil, closed}
	for op := 0; op*6 < len(p); op++ {
		b := p[op*6:]
		call := fuzzProgram(b).at(0)
		c := comms[fuzzProgram(b).at(1)%len(comms)]
		rank := fuzzRanks[fuzzProgram(b).at(2)%len(fuzzRanks)]
		tag := fuzzTags[fuzzProgram(b).at(3)%len(fuzzTags)]
		size := fuzzProgram(b).at(4) * 257 % (64 << 10)
		flags := fuzzProgram(b).at(5)
		var buf []byte
		if flags&1 == 0 {
			buf = make([]byte, size)
		}
		ctx, cancel := context.WithTimeout(context.Background(), fuzzDeadline)
		start := time.Now()
		name := fuzzCall(ctx, c, call, rank, tag, size, flags, buf)
		cancel()
		if d := time.Since(start); d > fuzzDeadline+fuzzSlack {
			return fmt.Errorf("%s took %v", name, d)
		}
	}
	return nil
}

// fuzzCall makes one call and names it; results are not checked, only
// that it returns.
func fuzzCall(ctx context.Context, c *Comm, call, rank, tag, size, flags int, buf []byte) string {
	counts := []int{size / 8, (size / 8) * (flags >> 1 & 1)}
	displs := []int{0, size / 8 * (flags >> 2 & 1)}
	if flags&8 != 0 {
		counts, displs = []int{-1, rank}, []int{rank}
	}
	elems := make([]int64, size/8)
	two := make([]int64, 2*len(elems))
	op := []Op{Sum, Max, LAnd, BXor, {}, NewOp("first", func(a, b int64) int64 { return a }, false)}[flags%6]
	names := []string{"Send", "Recv", "Isend", "Irecv", "Sendrecv", "Probe", "Iprobe", "Barrier", "Bcast",
		"Reduce", "Allreduce", "Scatter", "Gather", "Allgather", "Alltoall", "Scatterv", "Gatherv",
		"Allgatherv", "Alltoallv", "Split", "Transport", "SendSlice", "RecvSlice", "Ibcast", "Iallreduce", "Dup", "WaitAny",
		"ReduceScatterBlock", "ReduceScatter", "Scan", "Exscan", "Iexscan"}
	call %= len(names)
	switch names[call] {
	case "Send":
		c.Send(ctx, buf, rank, tag)
	case "Recv":
		c.Recv(ctx, buf, rank, tag)
	case "Isend", "Irecv":
		var q *Request
		if names[call] == "Isend" {
			q, _ = c.Isend(buf, rank, tag)
		} else {
			q, _ = c.Irecv(buf, rank, tag)
		}
		if flags&16 != 0 {
			q.Cancel()
		}
		if _, err := q.Wait(ctx); err != nil && !q.Cancel() {
			q.Wait(context.Background()) // moving already: it finishes
		}
	case "Sendrecv":
		c.Sendrecv(ctx, buf, rank, tag, make([]byte, size), rank, tag)
	case "Probe":
		c.Probe(ctx, rank, tag)
	case "Iprobe":
		c.Iprobe(rank, tag)
	case "Barrier":
		c.Barrier(ctx)
	case "Bcast":
		Bcast(ctx, c, elems, rank)
	case "Reduce":
		Reduce(ctx, c, elems, elems, op, rank)
	case "Allreduce":
		Allreduce(ctx, c, elems, make([]int64, len(elems)), op)
	case "Scatter":
		Scatter(ctx, c, two, elems, rank)
	case "Gather":
		Gather(ctx, c, elems, two, rank)
	case "Allgather":
		Allgather(ctx, c, elems, two)
	case "Alltoall":
		Alltoall(ctx, c, two, make([]int64, len(two)))
	case "Scatterv":
		Scatterv(ctx, c, two, counts, displs, elems, rank)
	case "Gatherv":
		Gatherv(ctx, c, elems, two, counts, displs, rank)
	case "Allgatherv":
		Allgatherv(ctx, c, elems, two, counts, displs)
	case "Alltoallv":
		Alltoallv(ctx, c, two, counts, displs, two, counts, displs)
	case "Split":
		c.Split(ctx, rank, tag)
	case "Transport":
		c.Transport(rank)
		c.WorldRank(rank)
	case "SendSlice":
		SendSlice(ctx, c, elems, rank, tag)
	case "RecvSlice":
		RecvSlice(ctx, c, elems, rank, tag)
	case "Ibcast":
		if q, err := Ibcast(ctx, c, elems, rank); err == nil {
			q.Wait(context.Background()) // it ends with its own context
		}
	case "Iallreduce":
		if q, err := Iallreduce(ctx, c, elems, make([]int64, len(elems)), op); err == nil {
			q.Wait(context.Background())
		}
	case "ReduceScatterBlock":
		ReduceScatterBlock(ctx, c, two, elems, op)
	case "ReduceScatter":
		recv := elems
		if k := counts[0]; k >= 0 && k <= len(elems) {
			recv = elems[:k]
		}
		ReduceScatter(ctx, c, elems, recv, counts, op)
	case "Scan":
		Scan(ctx, c, elems, elems, op)
	case "Exscan":
		Exscan(ctx, c, elems, make([]int64, len(elems)), op)
	case "Iexscan":
		if q, err := Iexscan(ctx, c, elems, make([]int64, len(elems)), op); err == nil {
			q.Wait(context.Background())
		}
	case "Dup":
		c.Dup()
	case "WaitAny":
		q, _ := c.Irecv(buf, rank, tag)
		WaitAny(ctx, q, nil)
		if q != nil && !q.Cancel() {
			q.Wait(context.Background())
		}
	}
	return names[call]
}

// TestAPIFuzzSeeds keeps testdata/fuzz/FuzzAPI in step: one program per
// call with valid arguments, and programs of bad ones (go test -run
// APIFuzzSeeds -rewrite-seeds).
func TestAPIFuzzSeeds(t *testing.T) {
	var seeds []fuzzseed.Seed
	for call := 0; call < 32; call++ {
		seeds = append(seeds, fuzzseed.Seed{Name: fmt.Sprintf("call-%02d", call), Values: []any{[]byte{byte(call), 0, 1, 0, 4, 0}}})
	}
	seeds = append(seeds,
		fuzzseed.Seed{Name: "bad-tags", Values: []any{[]byte{0, 0, 1, 6, 9, 0, 1, 0, 1, 7, 9, 0, 5, 0, 1, 8, 0, 0}}},
		fuzzseed.Seed{Name: "nil-and-closed", Values: []any{[]byte{8, 2, 0, 0, 4, 0, 10, 3, 0, 0, 4, 0, 19, 2, 4, 4, 0, 0}}},
		fuzzseed.Seed{Name: "bad-vectors", Values: []any{[]byte{15, 0, 0, 0, 40, 8, 18, 1, 5, 0, 40, 14}}},
		fuzzseed.Seed{Name: "mismatch-then-more", Values: []any{[]byte{10, 0, 0, 0, 200, 2, 13, 0, 0, 0, 3, 0, 7, 0, 0, 0, 0, 0}}},
	)
	fuzzseed.Sync(t, "FuzzAPI", seeds)
}
