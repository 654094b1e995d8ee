// Package fuzzseed keeps a fuzz target's seed corpus in testdata/fuzz in
// step with seeds built in code: the code builds valid messages of the
// current format (and near misses), the files are what `go test` and
// `go test -fuzz` read. A test calls Sync for each target; with
// -rewrite-seeds it writes the files, otherwise it fails when one is
// missing or stale.
package fuzzseed

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var rewrite = flag.Bool("rewrite-seeds", false, "rewrite the seed corpora in testdata/fuzz from the seeds built in code")

// Seed is one corpus entry: a file name and the fuzz function's arguments
// (after *testing.T), of the types the corpus format allows.
type Seed struct {
	Name   string
	Values []any
}

// Sync checks, or with -rewrite-seeds writes, testdata/fuzz/<target>/<name>
// for every seed. Other files there (inputs the fuzzer found) are left
// alone.
func Sync(t testing.TB, target string, seeds []Seed) {
	t.Helper()
	dir := filepath.Join("testdata", "fuzz", target)
	for _, s := range seeds {
		want, err := Encode(s.Values...)
		if err != nil {
			t.Fatalf("seed %s/%s: %v", target, s.Name, err)
		}
		path := filepath.Join(dir, s.Name)
		if *rewrite {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil || string(got) != want {
			t.Errorf("%s is missing or stale: run go test -run %s -rewrite-seeds", path, t.Name())
		}
	}
}

// Encode returns the corpus file that holds values, in the format of
// `go test -fuzz` (version 1).
func Encode(values ...any) (string, error) {
	var b strings.Builder
	b.WriteString("go test fuzz v1\n")
	for _, v := range values {
		switch v := v.(type) {
		case []byte:
			fmt.Fprintf(&b, "[]byte(%q)\n", v)
		case string:
			fmt.Fprintf(&b, "string(%q)\n", v)
		case bool, int, int32, int64, uint8, uint32, uint64:
			fmt.Fprintf(&b, "%T(%v)\n", v, v)
		default:
			return "", fmt.Errorf("type %T is not supported in a seed corpus", v)
		}
	}
	return b.String(), nil
}
