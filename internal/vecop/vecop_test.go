package vecop

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"runtime"
	"testing"
	"unsafe"
)

// The scalar loops the kernels must match bit for bit: the loops of the
// collective package's generic kernels (internal/coll/kernels.go).

func refSum[T number](d, s []T) {
	s = s[:len(d)]
	for i := range d {
		d[i] += s[i]
	}
}

func refProd[T number](d, s []T) {
	s = s[:len(d)]
	for i := range d {
		d[i] *= s[i]
	}
}

func refMin[T number](d, s []T) {
	s = s[:len(d)]
	for i := range d {
		d[i] = min(d[i], s[i])
	}
}

func refMax[T number](d, s []T) {
	s = s[:len(d)]
	for i := range d {
		d[i] = max(d[i], s[i])
	}
}

func refAnd[T integer](d, s []T) {
	s = s[:len(d)]
	for i := range d {
		d[i] &= s[i]
	}
}

func refOr[T integer](d, s []T) {
	s = s[:len(d)]
	for i := range d {
		d[i] |= s[i]
	}
}

func refXor[T integer](d, s []T) {
	s = s[:len(d)]
	for i := range d {
		d[i] ^= s[i]
	}
}

// bytesOf sees s as its bytes.
func bytesOf[T any](s []T) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), uintptr(len(s))*unsafe.Sizeof(*new(T)))
}

// viewAs sees b as T elements; b's start must be aligned for T.
func viewAs[T any](b []byte) []T {
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), uintptr(len(b))/unsafe.Sizeof(*new(T)))
}

// kernelCase is one exported kernel on one element type, seen on bytes.
type kernelCase struct {
	name     string // op/type
	typ      string // element type
	size     int    // element size in bytes
	fn, ref  func(dst, src []byte)
	specials []byte // special values, size bytes each
	// anyNaN: off amd64, which NaN a float sum or product of two NaNs
	// gives is up to the compiler, which takes + and * as commutative and
	// may swap their operands from one statement to the next; there the
	// Go loops may pick the other NaN than the scalar loop. On amd64 the
	// tests hold every path to the scalar loop's bits.
	anyNaN bool
	isNaN  func(b []byte) bool // whether b starts with a NaN; nil for integers
	// fill sets b to values drawn half from specials, half at random.
	fill func(r *rand.Rand, b []byte)
}

func mkCase[T number](op string, fn, ref func(d, s []T), specials []T, random func(r *rand.Rand) T) kernelCase {
	typ := reflect.TypeFor[T]().String()
	var isNaN func(b []byte) bool
	if typ == "float64" || typ == "float32" {
		isNaN = func(b []byte) bool { v := viewAs[T](b[:unsafe.Sizeof(*new(T))])[0]; return v != v }
	}
	return kernelCase{
		name:     op + "/" + typ,
		typ:      typ,
		size:     int(unsafe.Sizeof(*new(T))),
		fn:       func(d, s []byte) { fn(viewAs[T](d), viewAs[T](s)) },
		ref:      func(d, s []byte) { ref(viewAs[T](d), viewAs[T](s)) },
		specials: bytesOf(specials),
		anyNaN:   isNaN != nil && (op == "sum" || op == "prod") && runtime.GOARCH != "amd64",
		isNaN:    isNaN,
		fill: func(r *rand.Rand, b []byte) {
			v := viewAs[T](b)
			for i := range v {
				if r.IntN(2) == 0 {
					v[i] = specials[r.IntN(len(specials))]
				} else {
					v[i] = random(r)
				}
			}
		},
	}
}

// The special values: NaNs quiet and signalling, with payloads and both
// signs, signed zeros and infinities, extremes, and for integers the
// values where wrap-around and the signed/unsigned orders differ.
var (
	f64Specials = []float64{
		0, math.Copysign(0, -1), 1, -1, 0.5, -2, math.Inf(1), math.Inf(-1),
		math.MaxFloat64, -math.MaxFloat64, math.SmallestNonzeroFloat64, -math.SmallestNonzeroFloat64,
		0x1p-1022, 0x1p53, math.NaN(),
		math.Float64frombits(0x7ff8000000000000), math.Float64frombits(0xfff8000000000000),
		math.Float64frombits(0x7ff8000000000001), math.Float64frombits(0xfffc0000deadbeef),
		math.Float64frombits(0x7ff0000000000001), math.Float64frombits(0xfff4000000000000),
		math.Float64frombits(0x7ff7ffffffffffff), math.Float64frombits(0xfff0000012345678),
	}
	f32Specials = []float32{
		0, float32(math.Copysign(0, -1)), 1, -1, 0.5, -2, float32(math.Inf(1)), float32(math.Inf(-1)),
		math.MaxFloat32, -math.MaxFloat32, math.SmallestNonzeroFloat32, -math.SmallestNonzeroFloat32,
		0x1p-126, 0x1p24, float32(math.NaN()),
		math.Float32frombits(0x7fc00000), math.Float32frombits(0xffc00000),
		math.Float32frombits(0x7fc00001), math.Float32frombits(0xffe0beef),
		math.Float32frombits(0x7f800001), math.Float32frombits(0xffa00000),
		math.Float32frombits(0x7fbfffff), math.Float32frombits(0xff801234),
	}
)

// intSpecials returns the special values of an integer type.
func intSpecials[T integer]() []T {
	bits := 8 * unsafe.Sizeof(*new(T))
	top := T(1) << (bits - 1) // the sign bit: the minimum if signed
	return []T{0, 1, 2, 3, ^T(0), ^T(0) - 1, top, top + 1, top - 1, top - 2, top >> 1, 0x55, ^T(0x55)}
}

func randFloat64(r *rand.Rand) float64 {
	if r.IntN(2) == 0 {
		return math.Float64frombits(r.Uint64()) // any bits, NaNs now and then
	}
	return r.NormFloat64() * 1e3
}

func randFloat32(r *rand.Rand) float32 {
	if r.IntN(2) == 0 {
		return math.Float32frombits(r.Uint32())
	}
	return float32(r.NormFloat64() * 1e3)
}

func randInt[T integer](r *rand.Rand) T {
	if r.IntN(2) == 0 {
		return T(r.IntN(256) - 128) // small values: many equal pairs
	}
	return T(r.Uint64())
}

// bitwiseCases returns the bitwise kernels applied to T elements, as the
// collective package applies them.
func bitwiseCases[T integer](specials []T) []kernelCase {
	on := func(f func(d, s []byte)) func(d, s []T) {
		return func(d, s []T) { f(bytesOf(d), bytesOf(s)) }
	}
	return []kernelCase{
		mkCase("and", on(And), refAnd[T], specials, randInt[T]),
		mkCase("or", on(Or), refOr[T], specials, randInt[T]),
		mkCase("xor", on(Xor), refXor[T], specials, randInt[T]),
	}
}

// integerCases returns the kernels of T elements: signed's sum and
// product and their own orderings, for unsigned types too.
func integerCases[T integer, S integer](sum, prod func(d, s []S), mn, mx func(d, s []T)) []kernelCase {
	sp := intSpecials[T]()
	asS := func(f func(d, s []S)) func(d, s []T) {
		return func(d, s []T) { f(viewAs[S](bytesOf(d)), viewAs[S](bytesOf(s))) }
	}
	cs := []kernelCase{
		mkCase("sum", asS(sum), refSum[T], sp, randInt[T]),
		mkCase("min", mn, refMin[T], sp, randInt[T]),
		mkCase("max", mx, refMax[T], sp, randInt[T]),
	}
	if prod != nil {
		cs = append(cs, mkCase("prod", asS(prod), refProd[T], sp, randInt[T]))
	}
	return append(cs, bitwiseCases(sp)...)
}

// allCases lists every kernel on every element type.
func allCases() []kernelCase {
	cs := []kernelCase{
		mkCase("sum", SumFloat64, refSum[float64], f64Specials, randFloat64),
		mkCase("prod", ProdFloat64, refProd[float64], f64Specials, randFloat64),
		mkCase("min", MinFloat64, refMin[float64], f64Specials, randFloat64),
		mkCase("max", MaxFloat64, refMax[float64], f64Specials, randFloat64),
		mkCase("sum", SumFloat32, refSum[float32], f32Specials, randFloat32),
		mkCase("prod", ProdFloat32, refProd[float32], f32Specials, randFloat32),
		mkCase("min", MinFloat32, refMin[float32], f32Specials, randFloat32),
		mkCase("max", MaxFloat32, refMax[float32], f32Specials, randFloat32),
	}
	cs = append(cs, integerCases[int64](SumInt64, ProdInt64, MinInt64, MaxInt64)...)
	cs = append(cs, integerCases[uint64](SumInt64, ProdInt64, MinUint64, MaxUint64)...)
	cs = append(cs, integerCases[int32](SumInt32, ProdInt32, MinInt32, MaxInt32)...)
	cs = append(cs, integerCases[uint32](SumInt32, ProdInt32, MinUint32, MaxUint32)...)
	cs = append(cs, integerCases[int16](SumInt16, ProdInt16, MinInt16, MaxInt16)...)
	cs = append(cs, integerCases[uint16](SumInt16, ProdInt16, MinUint16, MaxUint16)...)
	cs = append(cs, integerCases[int8](SumInt8, nil, MinInt8, MaxInt8)...)
	cs = append(cs, integerCases[uint8](SumInt8, nil, MinUint8, MaxUint8)...)
	return cs
}

// paths returns the implementations to test on this machine: the Go
// loops always, the assembly kernels where the CPU runs them (whatever
// the default is, e.g. in race builds).
func paths() []string {
	if hasAsm {
		return []string{"go", "asm"}
	}
	return []string{"go"}
}

// setPath selects the implementation named by path until t ends.
func setPath(t testing.TB, path string) {
	old := useAsm
	useAsm = path == "asm"
	t.Cleanup(func() { useAsm = old })
}

// check runs c on dst and src at element offsets dOff and sOff of buffers
// filled from r, and compares every byte of both buffers, the guard
// elements around the slices included, with the scalar loop's result.
func check(t *testing.T, c kernelCase, r *rand.Rand, n, dOff, sOff int) {
	t.Helper()
	const guard = 3
	dbuf := make([]byte, (n+dOff+guard)*c.size)
	sbuf := make([]byte, (n+sOff+guard)*c.size)
	c.fill(r, dbuf)
	c.fill(r, sbuf)
	compare(t, c, dbuf, sbuf, dOff*c.size, sOff*c.size, n*c.size)
}

// compare runs c and its reference on copies of dbuf[dOff:dOff+n] and
// sbuf[sOff:sOff+n] (in bytes) and reports any difference in the buffers.
func compare(t *testing.T, c kernelCase, dbuf, sbuf []byte, dOff, sOff, n int) {
	t.Helper()
	gotD, gotS := clone(dbuf), clone(sbuf)
	wantD, wantS := clone(dbuf), clone(sbuf)
	c.fn(gotD[dOff:dOff+n], gotS[sOff:sOff+n])
	c.ref(wantD[dOff:dOff+n], wantS[sOff:sOff+n])
	for i := 0; i < len(gotD); i += c.size {
		if string(gotD[i:i+c.size]) != string(wantD[i:i+c.size]) &&
			!(c.anyNaN && i >= dOff && i < dOff+n && c.isNaN(gotD[i:]) && c.isNaN(wantD[i:]) &&
				c.isNaN(dbuf[i:]) && c.isNaN(sbuf[i-dOff+sOff:])) {
			t.Fatalf("%s, %d elements at dst+%d, src+%d: element %d is %s, want %s (dst %s, src %s)",
				c.name, n/c.size, dOff/c.size, sOff/c.size, (i-dOff)/c.size,
				show(c, gotD[i:]), show(c, wantD[i:]), show(c, dbuf[i:]), show(c, sbuf[i-dOff+sOff:]))
		}
	}
	if string(gotS) != string(sbuf) {
		t.Fatalf("%s, %d elements: src changed", c.name, n/c.size)
	}
}

// clone returns a copy of b that starts on a 64-byte boundary, so that
// offsets in elements are offsets from a cache line.
func clone(b []byte) []byte {
	c := make([]byte, len(b)+64)
	off := int(-uintptr(unsafe.Pointer(unsafe.SliceData(c))) & 63)
	c = c[off : off+len(b) : off+len(b)]
	copy(c, b)
	return c
}

// show formats the element at the start of b, with its bits.
func show(c kernelCase, b []byte) string {
	if len(b) < c.size {
		return "(outside)"
	}
	switch c.typ {
	case "float64":
		v := viewAs[float64](b[:8])[0]
		return fmt.Sprintf("%v (%#016x)", v, math.Float64bits(v))
	case "float32":
		v := viewAs[float32](b[:4])[0]
		return fmt.Sprintf("%v (%#08x)", v, math.Float32bits(v))
	}
	return fmt.Sprintf("% x", b[:c.size])
}

// testLengths are the lengths in elements: every length from 0 to 130,
// which crosses a block boundary for every element size, then a few
// large ones.
func testLengths(short bool) []int {
	var ns []int
	for n := range 131 {
		ns = append(ns, n)
	}
	ns = append(ns, 255, 256, 257, 1000)
	if !short {
		ns = append(ns, 4099, 65537)
	}
	return ns
}

// TestKernels compares every kernel with the scalar loop on random data
// at every length from 0 to 130 and a few larger, with dst and src
// starting at every element offset 0..7 from a cache line (each offset of
// dst paired with a different offset of src), on each implementation.
// The race detector, ten times slower, gets three of the offsets.
func TestKernels(t *testing.T) {
	dOffs := []int{0, 1, 2, 3, 4, 5, 6, 7}
	if raceEnabled {
		dOffs = []int{0, 3, 6}
	}
	for _, path := range paths() {
		t.Run(path, func(t *testing.T) {
			setPath(t, path)
			for _, c := range allCases() {
				t.Run(c.name, func(t *testing.T) {
					r := rand.New(rand.NewPCG(1, uint64(c.size)))
					for _, n := range testLengths(testing.Short() || raceEnabled) {
						for _, dOff := range dOffs {
							check(t, c, r, n, dOff, (dOff*3+1)%8)
						}
					}
				})
			}
		})
	}
}

// TestSpecialPairs combines every special value with every other, in both
// orders, at enough elements that the assembly kernels see every pair.
func TestSpecialPairs(t *testing.T) {
	for _, path := range paths() {
		t.Run(path, func(t *testing.T) {
			setPath(t, path)
			for _, c := range allCases() {
				t.Run(c.name, func(t *testing.T) {
					k := len(c.specials) / c.size
					var dbuf, sbuf []byte
					for i := range k {
						for j := range k {
							dbuf = append(dbuf, c.specials[i*c.size:(i+1)*c.size]...)
							sbuf = append(sbuf, c.specials[j*c.size:(j+1)*c.size]...)
						}
					}
					compare(t, c, dbuf, sbuf, 0, 0, len(dbuf))
				})
			}
		})
	}
}

// TestShortSrc: a src shorter than dst panics, as the scalar loop does,
// before anything is written.
func TestShortSrc(t *testing.T) {
	for _, path := range paths() {
		setPath(t, path)
		dst := make([]float64, 64)
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: SumFloat64 with a short src did not panic", path)
				}
			}()
			SumFloat64(dst, make([]float64, 63))
		}()
	}
}

// TestAllocs: a kernel call allocates nothing.
func TestAllocs(t *testing.T) {
	d, s := make([]float64, 1000), make([]float64, 1000)
	for _, path := range paths() {
		setPath(t, path)
		if n := testing.AllocsPerRun(10, func() { SumFloat64(d, s); MaxInt64(viewAs[int64](bytesOf(d)), viewAs[int64](bytesOf(s))) }); n != 0 {
			t.Errorf("%s: %v allocations per call", path, n)
		}
	}
}
