//go:build unix

package noderegion

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRegion: what the creator writes the mapper reads, and a path that
// is no region, or a region of another size, is a clear error.
func TestRegion(t *testing.T) {
	dir := t.TempDir()
	path, mem, err := Create(dir, 4096)
	if err != nil {
		t.Fatal(err)
	}
	defer os.Remove(path)
	defer Unmap(mem)
	copy(mem, "shared")
	other, err := Map(path, 4096)
	if err != nil {
		t.Fatal(err)
	}
	defer Unmap(other)
	if string(other[:6]) != "shared" {
		t.Fatalf("mapped %q", other[:6])
	}
	plain := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(plain, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, path string
		size       int
		want       string
	}{
		{"not a region", plain, 1, "is not a region"},
		{"wrong size", path, 8192, "holds 4096 bytes, want 8192"},
		{"missing", filepath.Join(dir, prefix+"gone"), 4096, "no such file"},
	} {
		if _, err := Map(c.path, c.size); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error saying %q", c.name, err, c.want)
		}
	}
}
