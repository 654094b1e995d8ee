package halo

import "fmt"

// Box is a rectangular block of cells of the full array: in dimension d
// the cells Start[d] ≤ i < Start[d]+Count[d], in full-array indices (the
// halo included, so the first interior cell is at Width).
type Box struct {
	Start, Count []int
}

// Run is a contiguous byte range Off ≤ i < Off+Len of an array.
type Run struct {
	Off, Len int
}

// Runs returns the contiguous byte runs of s's array that b covers, in
// increasing offset order and as few as possible: runs that touch are
// merged, so a box spanning whole rows of the full array merges across
// dimensions and the whole array is one run. An empty box has no runs.
func Runs(s Shape, b Box) ([]Run, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	full := s.Full()
	if err := b.check(full); err != nil {
		return nil, err
	}
	n := len(full)
	for _, c := range b.Count {
		if c == 0 {
			return nil, nil
		}
	}
	// stride[d] is the bytes between cells one apart in dimension d.
	stride := make([]int, n)
	st := s.cellBytes()
	for d := n - 1; d >= 0; d-- {
		stride[d] = st
		st *= full[d]
	}
	// Dimensions after k are whole, so each run spans Count[k] slices of
	// dimension k; dimensions before k give one run per index.
	k := n - 1
	for k >= 0 && b.Count[k] == full[k] {
		k--
	}
	if k < 0 {
		return []Run{{0, s.Bytes()}}, nil
	}
	runs := 1
	for d := range k {
		runs *= b.Count[d]
	}
	out := make([]Run, 0, runs)
	idx := make([]int, k)
	copy(idx, b.Start)
	l := b.Count[k] * stride[k]
	for {
		off := b.Start[k] * stride[k]
		for d, i := range idx {
			off += i * stride[d]
		}
		out = append(out, Run{off, l})
		d := k - 1
		for ; d >= 0; d-- {
			if idx[d]++; idx[d] < b.Start[d]+b.Count[d] {
				break
			}
			idx[d] = b.Start[d]
		}
		if d < 0 {
			return out, nil
		}
	}
}

// check reports why b is not a box of an array with the given full
// extents, or nil.
func (b Box) check(full []int) error {
	if len(b.Start) != len(full) || len(b.Count) != len(full) {
		return fmt.Errorf("halo: box has %d starts and %d counts for %d dimensions", len(b.Start), len(b.Count), len(full))
	}
	for d, f := range full {
		s, c := b.Start[d], b.Count[d]
		if s < 0 || c < 0 || s > f || c > f-s {
			return fmt.Errorf("halo: box start %d count %d leaves dimension %d of the full array (%d cells)", s, c, d, f)
		}
	}
	return nil
}

// RunsBytes returns the bytes runs cover.
func RunsBytes(runs []Run) int {
	n := 0
	for _, r := range runs {
		n += r.Len
	}
	return n
}

// Pack copies the runs of src one after another to the start of dst and
// returns the bytes copied. It copies nothing and returns an error if a
// run leaves src or the runs do not fit in dst.
func Pack(dst, src []byte, runs []Run) (int, error) {
	if err := checkRuns(runs, len(src), len(dst)); err != nil {
		return 0, err
	}
	n := 0
	for _, r := range runs {
		n += copy(dst[n:], src[r.Off:r.Off+r.Len])
	}
	return n, nil
}

// Unpack copies the start of src to the runs of dst, in order, and returns
// the bytes copied; it undoes Pack. It copies nothing and returns an error
// if a run leaves dst or src is shorter than the runs.
func Unpack(dst, src []byte, runs []Run) (int, error) {
	if err := checkRuns(runs, len(dst), len(src)); err != nil {
		return 0, err
	}
	n := 0
	for _, r := range runs {
		n += copy(dst[r.Off:r.Off+r.Len], src[n:])
	}
	return n, nil
}

// checkRuns reports whether a run leaves an array of size bytes or the
// runs together exceed packed bytes; checked before copying so that a bad
// run list leaves both buffers untouched.
func checkRuns(runs []Run, size, packed int) error {
	n := 0
	for i, r := range runs {
		if r.Off < 0 || r.Len < 0 || r.Off > size || r.Len > size-r.Off {
			return fmt.Errorf("halo: run %d (offset %d, %d bytes) leaves the %d-byte array", i, r.Off, r.Len, size)
		}
		if r.Len > packed-n {
			return fmt.Errorf("halo: runs exceed the %d-byte packed buffer", packed)
		}
		n += r.Len
	}
	return nil
}
