package halo

// Segments returns the runs of data as slices of it, in order: what a ddt
// implementation hands the core as a message of several regions, so that
// the box travels without a pack copy. It returns an error if a run
// leaves data.
func Segments(data []byte, runs []Run) ([][]byte, error) {
	if err := checkRuns(runs, len(data), RunsBytes(runs)); err != nil {
		return nil, err
	}
	segs := make([][]byte, len(runs))
	for i, r := range runs {
		segs[i] = data[r.Off : r.Off+r.Len : r.Off+r.Len]
	}
	return segs, nil
}

// CopySegments copies the bytes of src's segments, in order, to dst's and
// returns how many it copied: the lesser of the two totals. A box a rank
// sends itself goes this way, from its runs straight to the opposite
// box's.
func CopySegments(dst, src [][]byte) int {
	n := 0
	var d, s []byte
	for {
		for len(d) == 0 && len(dst) > 0 {
			d, dst = dst[0], dst[1:]
		}
		for len(s) == 0 && len(src) > 0 {
			s, src = src[0], src[1:]
		}
		if len(d) == 0 || len(s) == 0 {
			return n
		}
		k := copy(d, s)
		d, s, n = d[k:], s[k:], n+k
	}
}
