package vecop

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// benchSize is the size of dst in the benchmarks: a reduction of large
// messages, past the 1 MiB L2 of the reference machine with src and dst
// together.
const benchSize = 1 << 20

// benchKernels are the kernels benchmarked, by case name.
var benchKernels = []string{
	"sum/float64", "sum/float32", "prod/float64", "min/float64", "max/float64",
	"sum/int64", "prod/int64", "min/int64", "max/uint64", "sum/int32", "min/uint32",
	"sum/int8", "max/uint8", "xor/uint64",
}

// BenchmarkReduce measures each kernel on 1 MiB of dst: "asm" is the
// AVX2 kernel, "go" the unrolled Go loop, "scalar" the collective
// package's former one-element loop, and "copy" copy() of the same size,
// next to them so that the machine's load changes little between the
// kernel and its baseline. copy() is the bound for a kernel that reads two
// buffers and writes one.
func BenchmarkReduce(b *testing.B) {
	cases := map[string]kernelCase{}
	for _, c := range allCases() {
		cases[c.name] = c
	}
	for _, name := range benchKernels {
		c := cases[name]
		dst, src := benchData(c)
		for _, impl := range []string{"asm", "go", "scalar", "copy"} {
			if impl == "asm" && !hasAsm {
				continue
			}
			b.Run(strings.ReplaceAll(name, "/", "-")+"/"+impl, func(b *testing.B) {
				f := c.fn
				switch impl {
				case "scalar":
					f = c.ref
				case "copy":
					to := make([]byte, benchSize)
					f = func(_, src []byte) { copy(to, src) }
				default:
					setPath(b, impl)
				}
				b.SetBytes(benchSize)
				b.ReportAllocs()
				for b.Loop() {
					f(dst, src)
				}
			})
		}
	}
}

// benchData returns dst and src for c: random integers, or floats that
// stay normal however many times they are combined (src close to 1, so
// that products neither overflow nor reach the slow subnormals).
func benchData(c kernelCase) (dst, src []byte) {
	dst, src = make([]byte, benchSize), make([]byte, benchSize)
	r := rand.New(rand.NewPCG(3, 4))
	switch c.typ {
	case "float64":
		d, s := viewAs[float64](dst), viewAs[float64](src)
		for i := range d {
			d[i], s[i] = r.NormFloat64()*1e3, 1+r.NormFloat64()*0x1p-20
		}
	case "float32":
		d, s := viewAs[float32](dst), viewAs[float32](src)
		for i := range d {
			d[i], s[i] = float32(r.NormFloat64()*1e3), float32(1+r.NormFloat64()*0x1p-20)
		}
	default:
		for i := range dst {
			dst[i], src[i] = byte(r.Uint32()), byte(r.Uint32())
		}
	}
	return dst, src
}
