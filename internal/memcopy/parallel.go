package memcopy

import (
	"sync"
	"sync/atomic"
)

const (
	// MaxWorkers caps the workers argument of Parallel.
	MaxWorkers = 64

	// minPart is the smallest part Parallel hands to a worker: waking a
	// parked goroutine costs about a microsecond, the time to copy a few KiB.
	minPart = 4 << 10
)

// part is one contiguous piece of a Parallel copy, handed to a pool worker.
type part struct {
	dst, src []byte
	done     chan<- struct{}
}

var (
	// parts feeds the pool workers. Its buffer lets the caller queue all
	// parts and start on its own one without waiting for workers to wake.
	parts = make(chan part, MaxWorkers)

	// poolMu serialises starting workers; poolSize is read without it on
	// the fast path.
	poolMu   sync.Mutex
	poolSize atomic.Int32

	// dones recycles the per-call completion channels, so that a Parallel
	// call in steady state allocates nothing.
	dones = sync.Pool{New: func() any { return make(chan struct{}, MaxWorkers) }}
)

// Parallel copies min(len(dst), len(src)) bytes from src to dst and returns
// that number, like copy, split into workers contiguous parts copied
// concurrently: the calling goroutine copies the first part and
// workers-1 pool goroutines the others; Parallel returns when all are done.
// Each part is an ordinary copy() (which, for parts of 1 MiB or more on
// amd64, itself uses streaming stores: see the package documentation).
//
// workers is clamped to [1, MaxWorkers], and lowered so that every part is
// at least 4 KiB; with one worker Parallel is copy(). Part boundaries fall
// on multiples of 64 bytes from the start of dst, so two workers do not
// write the same cache line when dst is 64-byte aligned.
//
// The pool goroutines are started on first need, up to the largest
// workers-1 ever requested, and then park on a channel for the life of the
// process. After that, Parallel does not allocate. Concurrent calls share
// the pool; a call whose parts find every worker busy waits for one.
// dst and src must not overlap.
func Parallel(dst, src []byte, workers int) int {
	n := min(len(dst), len(src))
	w := min(max(workers, 1), MaxWorkers, n/minPart)
	if w <= 1 {
		return copy(dst, src)
	}
	ensureWorkers(w - 1)

	// Part size rounded up to a cache line; with parts of at least
	// minPart bytes and at most MaxWorkers of them, the last part is never
	// empty (n/w - 64·(w-1) > 0).
	size := (n/w + 63) &^ 63
	done := dones.Get().(chan struct{})
	for i := 1; i < w; i++ {
		lo, hi := i*size, min((i+1)*size, n)
		if i == w-1 {
			hi = n
		}
		parts <- part{dst: dst[lo:hi], src: src[lo:hi], done: done}
	}
	copy(dst[:size], src[:size])
	for i := 1; i < w; i++ {
		<-done
	}
	dones.Put(done)
	return n
}

// ensureWorkers starts pool goroutines until there are at least k.
func ensureWorkers(k int) {
	if int(poolSize.Load()) >= k {
		return
	}
	poolMu.Lock()
	defer poolMu.Unlock()
	for int(poolSize.Load()) < k {
		go worker()
		poolSize.Add(1)
	}
}

// worker copies the parts it receives, for the life of the process.
func worker() {
	for p := range parts {
		copy(p.dst, p.src)
		p.done <- struct{}{}
	}
}
