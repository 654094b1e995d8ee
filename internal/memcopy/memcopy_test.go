package memcopy

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/commtune/commtune/internal/testenv"
)

// impl is one copy function under test or benchmark.
type impl struct {
	name string
	copy func(dst, src []byte) int
}

// testImpls returns NT (default kernel) and NT forced onto every kernel
// this CPU supports, so that each assembly kernel and the generic fallback
// are tested on every machine that can run them.
func testImpls() []impl {
	impls := []impl{{"NT", NT}}
	for _, k := range []kernel{kernelGeneric, kernelAVX2, kernelAVX512} {
		if supported(k) {
			impls = append(impls, impl{"NT/" + k.String(), func(d, s []byte) int { return ntWith(k, d, s) }})
		}
	}
	return impls
}

// aligned returns a zeroed slice of length n whose first byte is 64-byte
// aligned.
func aligned(n int) []byte {
	b := make([]byte, n+64)
	off := int(-uintptr(unsafe.Pointer(unsafe.SliceData(b))) & 63)
	return b[off : off+n : off+n]
}

// pattern fills b with pseudo-random non-zero bytes: non-zero so that a
// byte left unwritten in a zeroed dst is caught, pseudo-random so that a
// byte copied from the wrong offset is caught too.
func pattern(b []byte) {
	r := rand.New(rand.NewPCG(4, uint64(len(b))))
	for i := range b {
		v := byte(r.Uint32())
		if v == 0 {
			v = 0x5a
		}
		b[i] = v
	}
}

// offsetPairs lists the (src, dst) offsets from a 64-byte-aligned base to
// test for length n: all 64×64 for small n; for large n, where the kernels'
// body is the same code as for small n, 64 pairs in which every src offset
// and every dst offset 0..63 appears once (29 is odd, so d is a bijection
// of s), or 8 in -short mode.
func offsetPairs(n int, short bool) [][2]int {
	var pairs [][2]int
	if n <= 8192 {
		for s := range 64 {
			for d := range 64 {
				pairs = append(pairs, [2]int{s, d})
			}
		}
		return pairs
	}
	step := 1
	if short {
		step = 9
	}
	for s := 0; s < 64; s += step {
		pairs = append(pairs, [2]int{s, (s*29 + 7) & 63})
	}
	return pairs
}

// guard is how many bytes on each side of dst must stay zero.
const guard = 64

func TestCopy(t *testing.T) {
	lengths := []int{
		0, 1, 7, 31, 32, 33, 63, 64, 65,
		255, 256, 257, ntMinLen - 1, ntMinLen, ntMinLen + 1, // kernel thresholds
		4095, 4096, 4097,
		1<<20 - 1, 1 << 20, 1<<20 + 1, // one chunkSize, ± a byte
		16<<20 + 3,
	}
	impls := testImpls()
	for _, n := range lengths {
		srcBase := aligned(64 + n)
		pattern(srcBase)
		dstBase := aligned(guard + 64 + n + guard)
		for _, im := range impls {
			t.Run(fmt.Sprintf("%s/n=%d", im.name, n), func(t *testing.T) {
				for _, p := range offsetPairs(n, testenv.Reduced()) {
					so, do := p[0], p[1]
					src := srcBase[so : so+n]
					clear(dstBase)
					dst := dstBase[guard+do : guard+do+n]
					if got := im.copy(dst, src); got != n {
						t.Fatalf("src+%d dst+%d: returned %d, want %d", so, do, got, n)
					}
					if !bytes.Equal(dst, src) {
						i := firstDiff(dst, src)
						t.Fatalf("src+%d dst+%d: dst[%d] = %#x, want %#x", so, do, i, dst[i], src[i])
					}
					if i := nonZero(dstBase[:guard+do]); i >= 0 {
						t.Fatalf("src+%d dst+%d: wrote %d bytes before dst", so, do, guard+do-i)
					}
					if i := nonZero(dstBase[guard+do+n:]); i >= 0 {
						t.Fatalf("src+%d dst+%d: wrote byte %d after dst", so, do, i)
					}
				}
			})
		}
	}
}

// TestCopyLengths checks that every implementation copies and returns
// min(len(dst), len(src)), like copy.
func TestCopyLengths(t *testing.T) {
	cases := []struct{ dst, src int }{
		{0, 5000}, {5000, 0}, {4096, 9000}, {9000, 4096}, {100000, 99999}, {99999, 100000},
	}
	for _, im := range testImpls() {
		for _, c := range cases {
			src := make([]byte, c.src)
			pattern(src)
			dst := make([]byte, c.dst)
			want := min(c.dst, c.src)
			if got := im.copy(dst, src); got != want {
				t.Errorf("%s(len %d, len %d) = %d, want %d", im.name, c.dst, c.src, got, want)
			}
			if !bytes.Equal(dst[:want], src[:want]) || nonZero(dst[want:]) >= 0 {
				t.Errorf("%s(len %d, len %d): wrong contents", im.name, c.dst, c.src)
			}
		}
	}
}

// TestNTOverlap checks NT's documented fallback to copy() for overlapping
// slices, in both directions.
func TestNTOverlap(t *testing.T) {
	const n = 10000
	for _, shift := range []int{-4097, -1, 1, 63, 4097} {
		buf := aligned(n + 2*4097)
		pattern(buf)
		ref := bytes.Clone(buf)
		so, do := 4097, 4097+shift
		copy(ref[do:do+n], ref[so:so+n])
		if got := NT(buf[do:do+n], buf[so:so+n]); got != n {
			t.Fatalf("shift %d: returned %d", shift, got)
		}
		if !bytes.Equal(buf, ref) {
			t.Errorf("shift %d: differs from copy() at %d", shift, firstDiff(buf, ref))
		}
	}
}

// TestNTAllocs: NT is the shared-memory driver's cache-free copy, run on
// every message that method carries, so it must not allocate.
func TestNTAllocs(t *testing.T) {
	src := make([]byte, 1<<20)
	dst := make([]byte, 1<<20)
	if a := testing.AllocsPerRun(100, func() { NT(dst, src) }); a != 0 {
		t.Errorf("NT allocates %v times per call", a)
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

func nonZero(b []byte) int {
	for i, v := range b {
		if v != 0 {
			return i
		}
	}
	return -1
}
