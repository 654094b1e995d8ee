package bench

import (
	"bytes"
	"strings"
	"testing"
)

func TestVsRows(t *testing.T) {
	ours := [][]float64{{1, 10}, {3, 30}, {2, 20}}
	ref := [][]float64{{2, 5}, {2, 5}, {8, 5}}
	rows := VsRows([]int{8, 1024}, ours, ref)
	want := []VsRow{{8, 2, 2, 1}, {1024, 20, 5, 4}}
	for i, r := range rows {
		if r != want[i] {
			t.Errorf("row %d = %+v, want %+v", i, r, want[i])
		}
	}
}

func TestWriteVsTable(t *testing.T) {
	tests := []struct {
		rep  VsReport
		want []string
	}{
		{VsReport{Bench: "pingpong", Ranks: 2, Transport: "shm", Ref: "openmpi", Rounds: 3,
			Rows: []VsRow{{Bytes: 1 << 20, CommtuneUS: 100, RefUS: 200, Ratio: 0.5}}},
			[]string{"openmpi MB/s", "1M", "0.50", "10486", "5243"}},
		{VsReport{Bench: "coll", Op: "bcast", Algo: "bcast/binomial", Ranks: 4, Transport: "auto", Ref: "mpich", Rounds: 1,
			Rows: []VsRow{{Bytes: 8, CommtuneUS: 3, RefUS: 1, Ratio: 3}}},
			[]string{"bcast (bcast/binomial), 4 ranks", "mpich us", "3.00"}},
	}
	for _, tc := range tests {
		var b bytes.Buffer
		if err := WriteVsTable(&b, &tc.rep); err != nil {
			t.Fatal(err)
		}
		for _, w := range tc.want {
			if !strings.Contains(b.String(), w) {
				t.Errorf("table lacks %q:\n%s", w, b.String())
			}
		}
	}
}
