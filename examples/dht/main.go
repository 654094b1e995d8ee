// Command dht counts words in a hash table spread over every rank's memory,
// filled with one-sided operations: no rank's program serves another's
// inserts. Each rank owns a table of slots in a window; a word's slot is
// claimed with CompareAndSwap and its count raised with FetchAndOp, under
// a shared LockAll epoch, and a global counter of batches is taken under
// an exclusive lock. At the end every rank checks the words it owns
// against a count it makes itself, and rank 0 prints the totals.
//
//	go build -o /tmp/dht ./examples/dht
//	go run ./cmd/commtune run -n 4 -- /tmp/dht -words 20000
//
// Without the launcher it runs as one rank; -local N runs N goroutine
// ranks in this process.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"hash/fnv"
	"os"

	"github.com/commtune/commtune"
)

func main() {
	words := flag.Int("words", 10000, "words each rank inserts")
	vocab := flag.Int("vocab", 2000, "distinct words")
	slots := flag.Int("slots", 4096, "slots per rank (at least vocab/ranks, with room to spare)")
	window := flag.String("window", "alloc", "alloc (AllocWindow: a node's ranks reach each other's tables in place) or new (NewWindow over this program's memory: through each target's agent)")
	local := flag.Int("local", 0, "run this many goroutine ranks in this process instead of under a launcher")
	flag.Parse()
	if *window != "alloc" && *window != "new" {
		fmt.Fprintf(os.Stderr, "dht: -window %q: want alloc or new\n", *window)
		os.Exit(2)
	}
	cfg := config{words: *words, vocab: *vocab, slots: *slots, alloc: *window == "alloc"}
	var err error
	if *local > 0 {
		err = commtune.Local(*local, func(c *commtune.Comm) error { return run(context.Background(), c, cfg) })
	} else {
		err = initAndRun(cfg)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "dht:", err)
		os.Exit(1)
	}
}

func initAndRun(cfg config) error {
	ctx := context.Background()
	c, err := commtune.Init(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	return run(ctx, c, cfg)
}

type config struct {
	words, vocab, slots int
	alloc               bool // AllocWindow, else NewWindow
}

// word returns the k-th word rank r inserts: a key in 1…vocab, skewed so
// that some words are frequent (as in text).
func word(r, k, vocab int) int64 {
	x := uint64(r)*0x9E3779B97F4A7C15 + uint64(k)*0xBF58476D1CE4E5B9 + 1
	x ^= x >> 31
	x *= 0x94D049BB133111EB
	x ^= x >> 29
	v := x % uint64(vocab)
	if x&1 == 0 {
		v %= uint64(vocab/16 + 1) // half the words come from the first sixteenth
	}
	return int64(v) + 1
}

// home returns the rank owning key and its first slot there.
func home(key int64, ranks, slots int) (int, int) {
	h := fnv.New64a()
	var b [8]byte
	for i := range b {
		b[i] = byte(key >> (8 * i))
	}
	h.Write(b[:])
	s := h.Sum64()
	return int(s % uint64(ranks)), int((s / uint64(ranks)) % uint64(slots))
}

// Each slot is two int64s in the window: the key (0: free) and its count.
const slotLen = 2

// errFull says a rank's table has no free slot left.
var errFull = errors.New("table full: raise -slots")

// insert adds one to key's count, claiming a slot for it if it has none.
func insert(ctx context.Context, w *commtune.Window[int64], key int64, ranks, slots int) error {
	owner, s := home(key, ranks, slots)
	for probe := 0; probe < slots; probe++ {
		slot := (s + probe) % slots
		old, err := w.CompareAndSwap(ctx, 0, key, owner, slot*slotLen)
		if err != nil {
			return err
		}
		if old == 0 || old == key { // claimed now, or already this key's
			_, err := w.FetchAndOp(ctx, 1, owner, slot*slotLen+1, commtune.Sum)
			return err
		}
	}
	return errFull
}

func run(ctx context.Context, c *commtune.Comm, cfg config) error {
	me, n := c.Rank(), c.Size()
	size := cfg.slots*slotLen + 1 // the last element: rank 0's batch counter
	var w *commtune.Window[int64]
	var err error
	if cfg.alloc {
		w, err = commtune.AllocWindow[int64](ctx, c, size)
	} else {
		w, err = commtune.NewWindow(ctx, c, make([]int64, size))
	}
	if err != nil {
		return err
	}
	const batch = 500
	if err := w.LockAll(ctx); err != nil {
		return err
	}
	batches := 0
	for k := 0; k < cfg.words; k++ {
		if err := insert(ctx, w, word(me, k, cfg.vocab), n, cfg.slots); err != nil {
			return err
		}
		if (k+1)%batch == 0 {
			batches++
		}
	}
	if err := w.UnlockAll(ctx); err != nil {
		return err
	}
	// The batch counter, under an exclusive lock: read, add, write back.
	counter := cfg.slots * slotLen
	if err := w.Lock(ctx, commtune.LockExclusive, 0); err != nil {
		return err
	}
	v := make([]int64, 1)
	if err := w.Get(ctx, v, 0, counter); err != nil {
		return err
	}
	v[0] += int64(batches)
	if err := w.Put(ctx, v, 0, counter); err != nil {
		return err
	}
	if err := w.Unlock(ctx, 0); err != nil {
		return err
	}
	if err := c.Barrier(ctx); err != nil {
		return err
	}
	// What the others wrote through this rank's agent, if it has one, is
	// ordered before this rank's reads by Sync (MPI_Win_sync).
	if err := w.Sync(); err != nil {
		return err
	}
	// Each rank checks the words it owns against its own count of every
	// rank's words (the generator is known to all).
	want := map[int64]int64{}
	for r := range n {
		for k := 0; k < cfg.words; k++ {
			if key := word(r, k, cfg.vocab); func() bool { o, _ := home(key, n, cfg.slots); return o == me }() {
				want[key]++
			}
		}
	}
	local := w.Local()
	var owned, total int64
	for s := 0; s < cfg.slots; s++ {
		key, count := local[s*slotLen], local[s*slotLen+1]
		if key == 0 {
			continue
		}
		if want[key] != count {
			return fmt.Errorf("rank %d: word %d counted %d, want %d", me, key, count, want[key])
		}
		delete(want, key)
		owned++
		total += count
	}
	if len(want) > 0 {
		return fmt.Errorf("rank %d: %d words never inserted", me, len(want))
	}
	sums := []int64{owned, total}
	if err := commtune.Allreduce(ctx, c, sums, sums, commtune.Sum); err != nil {
		return err
	}
	if me == 0 {
		if got, wantB := local[counter], int64(n*(cfg.words/batch)); got != wantB {
			return fmt.Errorf("batch counter %d, want %d", got, wantB)
		}
		fmt.Printf("%d ranks: %d distinct words, %d insertions (want %d), %d batches; every count checked by its owner\n",
			n, sums[0], sums[1], n*cfg.words, local[counter])
	}
	return w.Free(ctx)
}
