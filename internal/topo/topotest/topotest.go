// Package topotest builds sysfs trees for tests of code that reads the
// topology (package topo and its users).
package topotest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// WithoutCaches copies the sysfs tree at src into a temporary directory
// and removes every CPU's cache directory: a virtual machine's sysfs, such
// as the Firecracker guests', where caches must come from CPUID.
func WithoutCaches(t testing.TB, src string) string {
	t.Helper()
	dst := t.TempDir()
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	cpus, err := filepath.Glob(filepath.Join(dst, "devices", "system", "cpu", "cpu*"))
	if err != nil {
		t.Fatal(err)
	}
	for _, cpu := range cpus {
		if strings.Trim(filepath.Base(cpu)[3:], "0123456789") != "" {
			continue // cpufreq, cpuidle …
		}
		if err := os.RemoveAll(filepath.Join(cpu, "cache")); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}
