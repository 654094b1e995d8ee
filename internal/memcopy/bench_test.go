package memcopy

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"
	"unsafe"
)

// benchSizes are the message sizes of the brief, around the seed-004
// thresholds for this machine: DMA_min = 1 MiB L2 / (2 × 1 core) = 512 KiB
// and 32 MiB L3 / (2 × 2 cores) = 8 MiB (seed 004 §3.3).
var benchSizes = []int{64 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20, 64 << 20}

// benchImpls are the baseline copy() and the candidates for "cachefree".
func benchImpls() []impl {
	impls := []impl{
		{"copy", func(d, s []byte) int { return copy(d, s) }},
		{"NT", NT},
	}
	for _, k := range []kernel{kernelAVX2, kernelAVX512} {
		if supported(k) && k != defaultKernel {
			impls = append(impls, impl{"NT-" + k.String(), func(d, s []byte) int { return ntWith(k, d, s) }})
		}
	}
	return impls
}

// arenaSize is the size of each of the cold source and destination arenas:
// together 16 times the 32 MiB L3, so a buffer comes back round long after
// it has been evicted.
const arenaSize = 256 << 20

var (
	arenaOnce          sync.Once
	srcArena, dstArena []byte
)

// arenas returns the cold arenas, allocated and faulted in on first use.
func arenas() (src, dst []byte) {
	arenaOnce.Do(func() {
		srcArena, dstArena = aligned(arenaSize), aligned(arenaSize)
		for i := range srcArena {
			srcArena[i] = byte(i)
		}
		for i := 0; i < len(dstArena); i += 4096 {
			dstArena[i] = 1
		}
	})
	return srcArena, dstArena
}

func sizeName(n int) string {
	if n >= 1<<20 {
		return fmt.Sprintf("%dMiB", n>>20)
	}
	return fmt.Sprintf("%dKiB", n>>10)
}

// BenchmarkCopy measures bandwidth. "hot" reuses one pair of buffers, so
// for sizes below the caches both ends are cached; "cold" cycles through
// the arenas so that every copy reads and writes memory not touched for
// 512 MiB of traffic, as a message arriving from another process would be.
func BenchmarkCopy(b *testing.B) {
	for _, mode := range []string{"hot", "cold"} {
		for _, n := range benchSizes {
			for _, im := range benchImpls() {
				b.Run(fmt.Sprintf("mode=%s/size=%s/impl=%s", mode, sizeName(n), im.name), func(b *testing.B) {
					var src, dst []byte
					if mode == "hot" {
						src, dst = aligned(n), aligned(n)
						copy(src, dst) // fault both in
						im.copy(dst, src)
					} else {
						src, dst = arenas()
					}
					slots := len(src) / n
					b.SetBytes(int64(n))
					b.ReportAllocs()
					b.ResetTimer()
					for i := 0; b.Loop(); i++ {
						off := (i % slots) * n
						im.copy(dst[off:off+n], src[off:off+n])
					}
				})
			}
		}
	}
}

// wsSize is the application working set of BenchmarkPollution: half this
// machine's 1 MiB L2, i.e. the seed's cache / 2 for one process.
const wsSize = 512 << 10

// BenchmarkPollution measures what seed 004 §3.3 and §4.3 care about: the
// cost a copy imposes on the application around it. Each iteration warms a
// 512 KiB working set into the cache, copies size bytes between cold
// buffers, then times one pass over the working set (ws-ns/op) and one
// sequential read of the copied message (read-ns/op); copy-ns/op is the
// copy alone. The "none" impl does no copy and gives the all-hit working-set
// time; the excess over it is the pollution. read-ns/op shows the other side
// of the trade: a streamed message is in memory, not in the cache, when the
// receiver reads it.
//
// The working-set pass is a pointer chase through its 8192 cache lines in
// random order, so that the hardware prefetchers cannot hide misses and its
// time is close to the sum of the lines' load latencies: it counts how much
// of the working set the copy evicted, as seed 004 Fig. 8 counts L2 misses.
func BenchmarkPollution(b *testing.B) {
	ws := newWorkingSet(wsSize)
	impls := append([]impl{{"none", func(d, s []byte) int { return 0 }}}, benchImpls()...)
	for _, n := range benchSizes {
		for _, im := range impls {
			b.Run(fmt.Sprintf("size=%s/impl=%s", sizeName(n), im.name), func(b *testing.B) {
				pin(b)
				src, dst := arenas()
				slots := len(src) / n
				var wsTime, copyTime, readTime time.Duration
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; b.Loop(); i++ {
					sink += ws.chase()
					sink += ws.chase()
					off := (i % slots) * n
					t0 := time.Now()
					im.copy(dst[off:off+n], src[off:off+n])
					t1 := time.Now()
					sink += ws.chase()
					t2 := time.Now()
					sink += sum(dst[off : off+n])
					readTime += time.Since(t2)
					wsTime += t2.Sub(t1)
					copyTime += t1.Sub(t0)
				}
				b.ReportMetric(float64(wsTime.Nanoseconds())/float64(b.N), "ws-ns/op")
				b.ReportMetric(float64(copyTime.Nanoseconds())/float64(b.N), "copy-ns/op")
				b.ReportMetric(float64(readTime.Nanoseconds())/float64(b.N), "read-ns/op")
			})
		}
	}
}

// sink keeps the working-set passes from being optimised away.
var sink uint64

// workingSet is a buffer whose cache lines form one random cycle: the
// first word of each line holds the index of the next line's first word.
type workingSet []uint64

// newWorkingSet links the lines of a size-byte buffer into one cycle with
// Sattolo's algorithm (a uniformly random cyclic permutation).
func newWorkingSet(size int) workingSet {
	ws := workingSet(unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(aligned(size)))), size/8))
	lines := size / 64
	perm := make([]int, lines)
	for i := range perm {
		perm[i] = i
	}
	r := rand.New(rand.NewPCG(1, 2))
	for i := lines - 1; i > 0; i-- {
		j := r.IntN(i)
		perm[i], perm[j] = perm[j], perm[i]
	}
	for i, next := range perm {
		ws[i*8] = uint64(next * 8)
	}
	return ws
}

// chase visits every line once and returns where it stopped.
func (ws workingSet) chase() uint64 {
	var p uint64
	for range len(ws) / 8 {
		p = ws[p]
	}
	return p
}

// sum reads every 8-byte word of b, as a receiver consuming the message.
func sum(b []byte) uint64 {
	w := unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/8)
	var s0, s1, s2, s3 uint64
	for i := 0; i+3 < len(w); i += 4 {
		s0 += w[i]
		s1 += w[i+1]
		s2 += w[i+2]
		s3 += w[i+3]
	}
	return s0 + s1 + s2 + s3
}
