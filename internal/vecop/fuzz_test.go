package vecop

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/commtune/commtune/internal/fuzzseed"
)

// The fuzz targets, one per element type, run every kernel of that type on
// each implementation and compare the bits with the scalar loop. dst
// repeats a's elements and src b's, n elements of each (n mod 1024, so
// that the assembly kernels see even short inputs), at element offsets
// off mod 8 and off/8 mod 8 from a cache line.

func FuzzFloat64(f *testing.F) { fuzzType(f, "float64") }
func FuzzFloat32(f *testing.F) { fuzzType(f, "float32") }
func FuzzInt64(f *testing.F)   { fuzzType(f, "int64") }
func FuzzUint64(f *testing.F)  { fuzzType(f, "uint64") }
func FuzzInt32(f *testing.F)   { fuzzType(f, "int32") }
func FuzzUint32(f *testing.F)  { fuzzType(f, "uint32") }
func FuzzInt16(f *testing.F)   { fuzzType(f, "int16") }
func FuzzUint16(f *testing.F)  { fuzzType(f, "uint16") }
func FuzzInt8(f *testing.F)    { fuzzType(f, "int8") }
func FuzzUint8(f *testing.F)   { fuzzType(f, "uint8") }

// fuzzTypes are the element types with a fuzz target.
var fuzzTypes = []string{"float64", "float32", "int64", "uint64", "int32", "uint32", "int16", "uint16", "int8", "uint8"}

// casesOf returns the kernels on elements of type typ.
func casesOf(typ string) []kernelCase {
	var cs []kernelCase
	for _, c := range allCases() {
		if c.typ == typ {
			cs = append(cs, c)
		}
	}
	return cs
}

func fuzzType(f *testing.F, typ string) {
	cs := casesOf(typ)
	size := cs[0].size
	f.Fuzz(func(t *testing.T, a, b []byte, n uint32, off uint8) {
		n %= 1024
		dOff, sOff := int(off%8), int(off/8%8)
		dbuf := tile(a, (int(n)+dOff)*size)
		sbuf := tile(b, (int(n)+sOff)*size)
		for _, path := range paths() {
			setPath(t, path)
			for _, c := range cs {
				compare(t, c, dbuf, sbuf, dOff*size, sOff*size, int(n)*size)
			}
		}
	})
}

// tile returns n bytes that repeat p, or zeros if p is empty.
func tile(p []byte, n int) []byte {
	b := make([]byte, n)
	if len(p) > 0 {
		for i := 0; i < n; i += len(p) {
			copy(b[i:], p)
		}
	}
	return b
}

// TestFuzzSeeds keeps the seed corpora in testdata/fuzz in step with the
// seeds built here (go test -run FuzzSeeds -rewrite-seeds): for each type,
// every ordered pair of special values (k specials against k-1 repeat
// with period k(k-1), which pairs each with each), the same at unaligned
// offsets, random values around the block sizes, and empty input.
func TestFuzzSeeds(t *testing.T) {
	for _, typ := range fuzzTypes {
		c := casesOf(typ)[0]
		k := len(c.specials) / c.size
		r := rand.New(rand.NewPCG(7, uint64(c.size)))
		random := func(n int) []byte {
			b := make([]byte, n*c.size)
			c.fill(r, b)
			return b
		}
		target := "Fuzz" + string(typ[0]-'a'+'A') + typ[1:]
		seeds := []fuzzseed.Seed{
			{Name: "pairs", Values: []any{c.specials, c.specials[:(k-1)*c.size], uint32(k * (k - 1)), uint8(0)}},
			{Name: "pairs-unaligned", Values: []any{c.specials, c.specials[:(k-1)*c.size], uint32(k * (k - 1)), uint8(3 + 8*5)}},
			{Name: "empty", Values: []any{[]byte{}, []byte{}, uint32(0), uint8(0)}},
		}
		for i, n := range []int{1, 7, blockSize/c.size - 1, blockSize / c.size, 2*blockSize/c.size + 3, 1000} {
			seeds = append(seeds, fuzzseed.Seed{
				Name:   fmt.Sprintf("random-%d", i),
				Values: []any{random(n), random(n), uint32(n), uint8(i * 9)},
			})
		}
		fuzzseed.Sync(t, target, seeds)
	}
}
