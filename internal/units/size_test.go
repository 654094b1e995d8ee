package units

import (
	"fmt"
	"testing"

	"github.com/commtune/commtune/internal/fuzzseed"
)

func TestParseSize(t *testing.T) {
	tests := []struct {
		in      string
		want    int64
		wantErr bool
	}{
		{"0", 0, false},
		{"8", 8, false},
		{"1K", 1024, false},
		{"64KiB", 65536, false},
		{"64kb", 65536, false},
		{"1.5M", 1572864, false},
		{"4MiB", 4 << 20, false},
		{" 2 G ", 2 << 30, false},
		{"10B", 10, false},
		{"", 0, true},
		{"-1", 0, true},
		{"K", 0, true},
		{"1.5", 0, true},
		{"abc", 0, true},
		{"1e400K", 0, true},
		{"NaNK", 0, true},
		{"99999999999T", 0, true},
	}
	for _, tc := range tests {
		got, err := ParseSize(tc.in)
		if (err != nil) != tc.wantErr || (!tc.wantErr && got != tc.want) {
			t.Errorf("ParseSize(%q) = %d, %v; want %d, err %v", tc.in, got, err, tc.want, tc.wantErr)
		}
	}
}

func TestParseSizes(t *testing.T) {
	got, err := ParseSizes("8,1K,,64K")
	if err != nil || len(got) != 3 || got[2] != 65536 {
		t.Fatalf("ParseSizes = %v, %v", got, err)
	}
	if _, err := ParseSizes(" , "); err == nil {
		t.Fatal("empty list accepted")
	}
}

func TestFormatSize(t *testing.T) {
	tests := []struct {
		in   int64
		want string
	}{
		{0, "0"}, {8, "8"}, {1023, "1023"}, {1024, "1K"}, {12595, "12.3K"},
		{1 << 20, "1M"}, {1992294, "1.9M"}, {3 << 30, "3G"},
	}
	for _, tc := range tests {
		if got := FormatSize(tc.in); got != tc.want {
			t.Errorf("FormatSize(%d) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// FuzzParseSize checks ParseSize never panics nor accepts a negative size.
// The seed corpus is testdata/fuzz/FuzzParseSize (see TestFuzzSeeds).
func FuzzParseSize(f *testing.F) {
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseSize(s)
		if err == nil && n < 0 {
			t.Fatalf("ParseSize(%q) = %d", s, n)
		}
	})
}

// TestFuzzSeeds keeps testdata/fuzz/FuzzParseSize in step with the
// spellings ParseSize knows (go test -run FuzzSeeds -rewrite-seeds).
func TestFuzzSeeds(t *testing.T) {
	var seeds []fuzzseed.Seed
	for i, s := range []string{"8", "1K", "1.5MiB", "64k", "2 GiB", "-3", "1e9G", "", "0x10", "9223372036854775807"} {
		seeds = append(seeds, fuzzseed.Seed{Name: fmt.Sprintf("seed-%02d", i), Values: []any{s}})
	}
	fuzzseed.Sync(t, "FuzzParseSize", seeds)
}
