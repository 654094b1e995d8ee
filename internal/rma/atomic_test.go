package rma

import (
	"encoding/binary"
	"math"
	"reflect"
	"sync"
	"testing"
	"unsafe"

	"github.com/commtune/commtune/internal/coll"
)

// TestAccumulateContended: goroutines add to the same elements at once,
// through each path — hardware atomics (4 and 8 bytes, aligned), the
// accumulate lock (1, 2 and 16 bytes, and 8 bytes misaligned) — and every
// element ends at exactly the sum of the increments.
func TestAccumulateContended(t *testing.T) {
	const workers, rounds, cells = 4, 500, 6
	cases := []struct {
		name string
		kind reflect.Kind
		elem int
		skew int // bytes the window starts past an aligned address
		put  func(b []byte, v float64)
		get  func(b []byte) float64
	}{
		{"int8", reflect.Int8, 1, 0, func(b []byte, v float64) { b[0] = byte(int8(v)) }, func(b []byte) float64 { return float64(int8(b[0])) }},
		{"int16", reflect.Int16, 2, 0, func(b []byte, v float64) { binary.LittleEndian.PutUint16(b, uint16(int16(v))) },
			func(b []byte) float64 { return float64(int16(binary.LittleEndian.Uint16(b))) }},
		{"int32", reflect.Int32, 4, 0, func(b []byte, v float64) { binary.LittleEndian.PutUint32(b, uint32(int32(v))) },
			func(b []byte) float64 { return float64(int32(binary.LittleEndian.Uint32(b))) }},
		{"float32", reflect.Float32, 4, 0, func(b []byte, v float64) { binary.LittleEndian.PutUint32(b, math.Float32bits(float32(v))) },
			func(b []byte) float64 { return float64(math.Float32frombits(binary.LittleEndian.Uint32(b))) }},
		{"int64", reflect.Int64, 8, 0, func(b []byte, v float64) { binary.LittleEndian.PutUint64(b, uint64(int64(v))) },
			func(b []byte) float64 { return float64(int64(binary.LittleEndian.Uint64(b))) }},
		{"float64", reflect.Float64, 8, 0, func(b []byte, v float64) { binary.LittleEndian.PutUint64(b, math.Float64bits(v)) },
			func(b []byte) float64 { return math.Float64frombits(binary.LittleEndian.Uint64(b)) }},
		{"int64 misaligned", reflect.Int64, 8, 4, func(b []byte, v float64) { binary.LittleEndian.PutUint64(b, uint64(int64(v))) },
			func(b []byte) float64 { return float64(int64(binary.LittleEndian.Uint64(b))) }},
		{"complex128", reflect.Complex128, 16, 0, func(b []byte, v float64) { binary.LittleEndian.PutUint64(b, math.Float64bits(v)) },
			func(b []byte) float64 { return math.Float64frombits(binary.LittleEndian.Uint64(b)) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			red, err := Kernel(OpCode(coll.OpSum), tc.kind)
			if err != nil {
				t.Fatal(err)
			}
			op := localOp(OpCode(coll.OpSum), tc.kind)
			raw := make([]uint64, (tc.skew+cells*tc.elem)/8+2)
			base := unsafe.Slice((*byte)(unsafe.Pointer(&raw[0])), len(raw)*8)[tc.skew : tc.skew+cells*tc.elem]
			if aligned := atomicWidth(base, tc.elem); aligned != (tc.skew == 0 && (tc.elem == 4 || tc.elem == 8)) {
				t.Fatalf("atomicWidth = %v", aligned)
			}
			var h Header
			var wg sync.WaitGroup
			for w := range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					src := make([]byte, cells*tc.elem)
					fetch := make([]byte, cells*tc.elem)
					for i := range cells {
						tc.put(src[i*tc.elem:], float64(i+1+w%2))
					}
					for range rounds {
						accumulate(base, base, src, fetch, tc.elem, op, red, &h)
					}
				}()
			}
			wg.Wait()
			for i := range cells {
				// Half the workers add i+1, half i+2.
				want := float64(rounds * (workers/2*(i+1) + workers/2*(i+2)))
				if tc.elem == 1 {
					want = float64(int8(int(want)))
				}
				if got := tc.get(base[i*tc.elem:]); got != want {
					t.Errorf("cell %d = %v, want %v", i, got, want)
				}
			}
		})
	}
}

// TestFetchOpAndSwap: the operations on one element, by bits: fetch-and-
// add, NoOp, Replace, a reduction by compare-and-swap, and CAS that takes
// or leaves the element.
func TestFetchOpAndSwap(t *testing.T) {
	maxK, _ := Kernel(OpCode(coll.OpMax), reflect.Int64)
	var cell [2]uint64
	p := unsafe.Pointer(&cell[0])
	steps := []struct {
		op      OpCode
		v       uint64
		old     uint64
		after   uint64
		reducer coll.Reducer
	}{
		{opAdd, 5, 0, 5, nil},
		{opAdd, ^uint64(1), 5, 3, nil}, // minus two
		{OpNoOp, 99, 3, 3, nil},
		{OpReplace, 42, 3, 42, nil},
		{OpCode(coll.OpMax), 40, 42, 42, maxK},
		{OpCode(coll.OpMax), 50, 42, 50, maxK},
	}
	for i, s := range steps {
		if got := fetchOp(p, 8, s.v, s.op, s.reducer); got != s.old || cell[0] != s.after {
			t.Errorf("step %d: old %d, now %d; want %d, %d", i, got, cell[0], s.old, s.after)
		}
	}
	if old := casBits(p, 8, 7, 8); old != 50 || cell[0] != 50 {
		t.Errorf("CAS of a wrong value: old %d, now %d", old, cell[0])
	}
	if old := casBits(p, 8, 50, 8); old != 50 || cell[0] != 8 {
		t.Errorf("CAS of the right value: old %d, now %d", old, cell[0])
	}
	if old := casBits(unsafe.Pointer(&cell[1]), 4, 0, 9); old != 0 || cell[1] != 9 {
		t.Errorf("4-byte CAS: old %d, now %d", old, cell[1])
	}
	// The locked path: 2-byte elements.
	b := make([]byte, 4)
	var h Header
	res := make([]byte, 2)
	compareAndSwap(b, b[2:], []byte{0, 0}, []byte{7, 0}, res, &h)
	if b[2] != 7 || res[0] != 0 {
		t.Errorf("2-byte CAS: %v, fetched %v", b, res)
	}
}

// TestLocks: shared holders exclude an exclusive one and the reverse.
func TestLocks(t *testing.T) {
	var h Header
	if !h.tryLock(Shared) || !h.tryLock(Shared) {
		t.Fatal("two shared locks refused")
	}
	if h.tryLock(Exclusive) {
		t.Fatal("exclusive lock taken over shared ones")
	}
	h.unlock(Shared)
	h.unlock(Shared)
	if !h.tryLock(Exclusive) {
		t.Fatal("exclusive lock of a free window refused")
	}
	if h.tryLock(Shared) || h.tryLock(Exclusive) {
		t.Fatal("lock taken over an exclusive one")
	}
	h.unlock(Exclusive)
	if h.lock.Load() != 0 {
		t.Fatalf("lock word %x after every unlock", h.lock.Load())
	}
}
