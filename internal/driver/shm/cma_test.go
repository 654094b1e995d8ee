package shm

import (
	"bytes"
	"os"
	"testing"
	"unsafe"

	"github.com/commtune/commtune/internal/driver"
)

// TestReadSpans reads ranges of this process's own memory, cut in ways
// that put the local and remote boundaries in different places and need
// more pieces than one system call takes, and checks every byte.
func TestReadSpans(t *testing.T) {
	src := make([]byte, 50_000)
	for i := range src {
		src[i] = byte(i*7 + 3)
	}
	cut := func(b []byte, sizes ...int) [][]byte {
		var out [][]byte
		for _, k := range sizes {
			out, b = append(out, b[:k]), b[k:]
		}
		return out
	}
	repeat := func(k, n int) []int {
		s := make([]int, n)
		for i := range s {
			s[i] = k
		}
		return s
	}
	base := uintptr(unsafe.Pointer(&src[0]))
	span := func(off, n int) driver.Span {
		return driver.Span{Addr: uint64(base) + uint64(off), Len: n}
	}
	for _, tc := range []struct {
		name   string
		remote []driver.Span
		local  []int
	}{
		{"one to one", []driver.Span{span(0, 1000)}, []int{1000}},
		{"one to many", []driver.Span{span(10, 1000)}, []int{1, 0, 499, 500}},
		{"many to one", []driver.Span{span(0, 10), span(100, 90), span(5000, 900)}, []int{1000}},
		{"crossed cuts", []driver.Span{span(0, 3), span(50, 700), span(2000, 297)}, []int{500, 1, 499}},
		{"strided, beyond IOV_MAX", stride(span, 3000, 8, 16), repeat(12, 2000)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var want []byte
			for _, s := range tc.remote {
				off := int(uintptr(s.Addr) - base)
				want = append(want, src[off:off+s.Len]...)
			}
			total := 0
			for _, k := range tc.local {
				total += k
			}
			dst := make([]byte, total)
			n, err := processVMReadSpans(os.Getpid(), cut(dst, tc.local...), tc.remote)
			if err != nil || n != total {
				t.Fatalf("read %d of %d: %v", n, total, err)
			}
			if !bytes.Equal(dst, want) {
				t.Fatal("wrong bytes read")
			}
		})
	}
	if _, err := processVMReadSpans(os.Getpid(), [][]byte{make([]byte, 5)}, []driver.Span{span(0, 4)}); err == nil {
		t.Fatal("lists of different lengths read")
	}
}

// stride returns n ranges of k bytes, every step bytes.
func stride(span func(off, n int) driver.Span, n, k, step int) []driver.Span {
	out := make([]driver.Span, n)
	for i := range out {
		out[i] = span(i*step, k)
	}
	return out
}
