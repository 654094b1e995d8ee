package boot

import (
	"bytes"
	"errors"
	"math"
	"reflect"
	"sync"
	"testing"
)

// TestFlexVarint: OpenPMIx's varints are LEB128 up to 8 groups, then a
// 9th byte of 8 raw bits; values from 2^56 up need it, and Go's own
// varint reads them wrongly. The bytes below are what OpenPMIx's
// flex_pack_integer makes.
func TestFlexVarint(t *testing.T) {
	tests := []struct {
		v    uint64
		want []byte
	}{
		{0, []byte{0x00}},
		{1, []byte{0x01}},
		{127, []byte{0x7f}},
		{128, []byte{0x80, 0x01}},
		{0xfffffffe, []byte{0xfe, 0xff, 0xff, 0xff, 0x0f}},
		{1<<56 - 1, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f}},
		{1 << 56, []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01}},
		{1 << 63, []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80}},
		{math.MaxUint64, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}},
	}
	for _, tc := range tests {
		if got := appendFlex(nil, tc.v); !bytes.Equal(got, tc.want) {
			t.Errorf("appendFlex(%d) = % x, want % x", tc.v, got, tc.want)
		}
		if v, n := flexUvarint(append(tc.want, 0x55)); v != tc.v || n != len(tc.want) {
			t.Errorf("flexUvarint(% x) = %d, %d bytes; want %d, %d", tc.want, v, n, tc.v, len(tc.want))
		}
		if _, n := flexUvarint(tc.want[:len(tc.want)-1]); n != 0 {
			t.Errorf("flexUvarint of % x cut short read %d bytes", tc.want, n)
		}
	}
	for _, v := range []int64{0, -1, 1, math.MinInt64, math.MaxInt64, -46} {
		if got := unzigzag(zigzag(v)); got != v {
			t.Errorf("zigzag round trip of %d gave %d", v, got)
		}
	}
	if zigzag(1) != 2 || zigzag(-1) != 1 || zigzag(-46) != 91 {
		t.Error("zigzag does not map 1, -1, -46 to 2, 1, 91 as OpenPMIx does")
	}
}

// TestPMIxValueTypes: each value type decodes from the bytes either
// encoding gives it, the large and signed ones included.
func TestPMIxValueTypes(t *testing.T) {
	tests := []struct {
		name string
		t    uint16
		v4   []byte
		v3   []byte
		want any
	}{
		{"undef", pmixUndef, nil, nil, nil},
		{"int8 -2", pmixInt8, []byte{0xfe}, []byte{0xfe}, int64(-2)},
		{"uint64 max", pmixUint64, appendFlex(nil, math.MaxUint64), bytes.Repeat([]byte{0xff}, 8), uint64(math.MaxUint64)},
		{"int64 min", pmixInt64, appendFlex(nil, zigzag(math.MinInt64)), []byte{0x80, 0, 0, 0, 0, 0, 0, 0}, int64(math.MinInt64)},
		{"size 1 TiB", pmixSize, appendFlex(nil, 1<<40), []byte{0, 0x0f, 0, 0, 1, 0, 0, 0, 0, 0}, uint64(1 << 40)},
		{"time", pmixTime, appendFlex(nil, 5), []byte{0, 0, 0, 0, 0, 0, 0, 5}, uint64(5)},
		{"timeval", pmixTimeval, []byte{0x04, 0x01}, []byte{0, 0, 0, 0, 0, 0, 0, 2, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, [2]int64{2, -1}},
		{"double as text", pmixDouble, []byte{0x0a, '1', '.', '5', '0', 0}, []byte{0, 0, 0, 5, '1', '.', '5', '0', 0}, "1.50"},
		{"cpuset", pmixCPUSet, []byte{0x08, '0', '-', '1', 0}, []byte{0, 0, 0, 4, '0', '-', '1', 0}, "0-1"},
		{"compressed string", pmixCompressedString, []byte{0x02, 0x78, 0x9c}, []byte{0, 0x0f, 0, 0, 0, 0, 0, 0, 0, 2, 0x78, 0x9c}, []byte{0x78, 0x9c}},
		{"pid", pmixPID, []byte{0x0e, 0x90, 0x03}, []byte{0, 0x0e, 0, 0, 1, 0x90}, int64(400)},
	}
	for _, tc := range tests {
		for _, enc := range []pmixEncoding{pmixV4, pmixV3} {
			in := tc.v4
			if enc == pmixV3 {
				in = tc.v3
			}
			r := &pmixReader{b: in, enc: enc}
			got := r.typed(tc.t, tc.name, 0)
			if r.err != nil || !reflect.DeepEqual(got, tc.want) || r.left() != 0 {
				t.Errorf("encoding %d, %s: %#v (%v), %d bytes left; want %#v", enc, tc.name, got, r.err, r.left(), tc.want)
			}
		}
	}
}

// TestPMIxValueBudget: a message of many one-byte values stops at the
// decoder's bound instead of growing without end.
func TestPMIxValueBudget(t *testing.T) {
	w := &pmixWriter{enc: pmixV4}
	w.u16(pmixDataArray)
	w.u16(pmixBool)
	w.size(pmixMaxValues + 1)
	w.b = append(w.b, make([]byte, pmixMaxValues+1)...)
	r := &pmixReader{b: w.b, enc: pmixV4}
	r.value("many", 0)
	if r.err == nil {
		t.Fatal("decoded more values than the bound")
	}
}

// TestPMIxKeyPastJob: a key naming a rank past the job's size is refused
// before any request, and Close from two goroutines finalizes once.
func TestPMIxKeyPastJob(t *testing.T) {
	ctx := testCtx(t)
	f := newFakePMIx(t, 2)
	jobs := discoverPMIx(t, ctx, f)
	if _, err := jobs[0].KV.Get(ctx, "addr/2"); !errors.Is(err, ErrRefused) {
		t.Errorf("get of rank 2's key in a job of 2: %v, want ErrRefused", err)
	}
	for _, j := range jobs {
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i := range errs {
			wg.Add(1)
			go func() { defer wg.Done(); errs[i] = j.Close() }()
		}
		wg.Wait()
		if errs[0] != nil || errs[1] != nil {
			t.Errorf("two Closes: %v, %v", errs[0], errs[1])
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for r, n := range f.finalizes {
		if n != 1 {
			t.Errorf("rank %d finalized %d times", r, n)
		}
	}
}
