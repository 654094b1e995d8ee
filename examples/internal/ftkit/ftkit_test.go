package ftkit

import (
	"slices"
	"testing"
)

func TestParseRanks(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []int
		bad  bool
	}{
		{"", nil, false},
		{"3", []int{3}, false},
		{"3, 5", []int{3, 5}, false},
		{"-1", nil, true},
		{"a", nil, true},
		{"3,,5", nil, true},
	} {
		got, err := ParseRanks(tc.in)
		if (err != nil) != tc.bad || !slices.Equal(got, tc.want) {
			t.Errorf("ParseRanks(%q) = %v, %v", tc.in, got, err)
		}
		if !tc.bad && len(tc.want) > 0 && FormatRanks(got) != FormatRanks(tc.want) {
			t.Errorf("FormatRanks(%v) = %q", got, FormatRanks(got))
		}
	}
	if FormatRanks([]int{2, 3}) != "2,3" {
		t.Errorf("FormatRanks: %q", FormatRanks([]int{2, 3}))
	}
}
