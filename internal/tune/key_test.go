package tune

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/commtune/commtune/internal/fuzzseed"
)

func TestKeyRoundTrip(t *testing.T) {
	cases := []struct {
		key  Key
		text string
	}{
		{Key{Op: "allreduce", Ranks: 8, SizeClass: 16, Commutative: true, Transports: "shm"},
			"allreduce/ranks=8/size=2^16/commutative/shm"},
		{Key{Op: "bcast", Ranks: 64, SizeClass: 3, Transports: "shm+tcp"},
			"bcast/ranks=64/size=2^3/noncommutative/shm+tcp"},
		{Key{}, "/ranks=0/size=2^0/noncommutative/"},
		{Key{Op: "a/b c%", Ranks: -1, SizeClass: -5, Transports: "tcp rails=2"},
			"a%2Fb%20c%25/ranks=-1/size=2^-5/noncommutative/tcp%20rails=2"},
		{Key{Op: "ünï\x00\xff", Ranks: math.MaxInt, SizeClass: math.MinInt, Commutative: true, Transports: "-._~+,:=@"},
			fmt.Sprintf("%%C3%%BCn%%C3%%AF%%00%%FF/ranks=%d/size=2^%d/commutative/-._~+,:=@", math.MaxInt, math.MinInt)},
	}
	for _, tc := range cases {
		t.Run(tc.text, func(t *testing.T) {
			if got := tc.key.String(); got != tc.text {
				t.Fatalf("%#v.String() = %q, want %q", tc.key, got, tc.text)
			}
			got, err := ParseKey(tc.text)
			if err != nil || got != tc.key {
				t.Fatalf("ParseKey(%q) = %#v, %v; want %#v", tc.text, got, err, tc.key)
			}
		})
	}
}

func TestParseKeyRejects(t *testing.T) {
	for _, s := range []string{
		"",
		"allreduce",
		"allreduce/ranks=8/size=2^16/commutative",
		"allreduce/ranks=8/size=2^16/commutative/shm/extra",
		"allreduce/ranks=08/size=2^16/commutative/shm",
		"allreduce/ranks=+8/size=2^16/commutative/shm",
		"allreduce/ranks=-0/size=2^16/commutative/shm",
		"allreduce/ranks=/size=2^16/commutative/shm",
		"allreduce/ranks=99999999999999999999/size=2^16/commutative/shm",
		"allreduce/n=8/size=2^16/commutative/shm",
		"allreduce/ranks=8/size=16/commutative/shm",
		"allreduce/ranks=8/size=2^16/yes/shm",
		"allreduce/ranks=8/size=2^16/Commutative/shm",
		"all reduce/ranks=8/size=2^16/commutative/shm",
		"allreduce/ranks=8/size=2^16/commutative/s%2",
		"allreduce/ranks=8/size=2^16/commutative/s%2f",
		"allreduce/ranks=8/size=2^16/commutative/s%41",
		"allreduce/ranks=8/size=2^16/commutative/sh\xffm",
	} {
		if k, err := ParseKey(s); err == nil {
			t.Errorf("ParseKey(%q) = %#v, want an error", s, k)
		}
	}
}

func TestKeyJSONMapKey(t *testing.T) {
	k := Key{Op: "reduce", Ranks: 4, SizeClass: 20, Commutative: true, Transports: "tcp"}
	b, err := json.Marshal(map[Key]int{k: 1})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"reduce/ranks=4/size=2^20/commutative/tcp":1}`; string(b) != want {
		t.Fatalf("json = %s, want %s", b, want)
	}
	var back map[Key]int
	if err := json.Unmarshal(b, &back); err != nil || back[k] != 1 || len(back) != 1 {
		t.Fatalf("unmarshal = %v, %v", back, err)
	}
	if err := json.Unmarshal([]byte(`{"nonsense":1}`), &back); err == nil {
		t.Fatalf("unmarshal of a bad key succeeded")
	}
}

func TestSizeClass(t *testing.T) {
	for _, tc := range []struct{ bytes, class int }{
		{-1, 0}, {0, 0}, {1, 0}, {2, 1}, {3, 1}, {4, 2}, {1023, 9}, {1024, 10}, {1025, 10},
		{1 << 20, 20}, {1<<20 - 1, 19}, {math.MaxInt, 62},
	} {
		if got := SizeClass(tc.bytes); got != tc.class {
			t.Errorf("SizeClass(%d) = %d, want %d", tc.bytes, got, tc.class)
		}
	}
}

// FuzzParseKey: ParseKey never panics, whatever it accepts prints back as
// the input, and any key made from the input round-trips.
func FuzzParseKey(f *testing.F) {
	for _, s := range keySeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if k, err := ParseKey(s); err == nil {
			if got := k.String(); got != s {
				t.Fatalf("ParseKey(%q) = %#v, which prints as %q", s, k, got)
			}
		}
		k := Key{Op: s, Ranks: len(s) - 3, SizeClass: -len(s), Commutative: len(s)%2 == 0, Transports: strings.ToUpper(s)}
		back, err := ParseKey(k.String())
		if err != nil || back != k {
			t.Fatalf("%#v prints as %q, which parses to %#v, %v", k, k.String(), back, err)
		}
	})
}

var keySeeds = []string{
	"allreduce/ranks=8/size=2^16/commutative/shm",
	"bcast/ranks=64/size=2^3/noncommutative/shm+tcp",
	"/ranks=0/size=2^0/noncommutative/",
	"a%2Fb%20c%25/ranks=-1/size=2^-5/noncommutative/tcp%20rails=2",
	"allreduce/ranks=08/size=2^16/commutative/shm",
	"allreduce/ranks=8/size=2^16/commutative/s%2f",
	"allreduce/ranks=8/size=2^16/commutative/s%2",
	"allreduce/ranks=8/size=2^16/commutative",
	"all reduce/ranks=8/size=2^16/yes/shm",
	"",
}

// TestFuzzSeeds keeps testdata/fuzz/FuzzParseKey in step with keySeeds
// (go test -run FuzzSeeds -rewrite-seeds).
func TestFuzzSeeds(t *testing.T) {
	var seeds []fuzzseed.Seed
	for i, s := range keySeeds {
		seeds = append(seeds, fuzzseed.Seed{Name: fmt.Sprintf("seed-%02d", i), Values: []any{s}})
	}
	fuzzseed.Sync(t, "FuzzParseKey", seeds)
}
