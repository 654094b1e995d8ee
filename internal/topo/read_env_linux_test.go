package topo

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestReadNamesTheVariable: a tree COMMTUNE_SYSFS names that cannot be read
// is reported as that variable's value, with what it should hold.
func TestReadNamesTheVariable(t *testing.T) {
	for _, root := range []string{filepath.Join(t.TempDir(), "missing"), t.TempDir()} {
		t.Setenv(EnvSysfs, root)
		_, err := Read()
		if err == nil || !strings.Contains(err.Error(), EnvSysfs+`="`+root+`"`) || !strings.Contains(err.Error(), "want the root of a copy of /sys") {
			t.Errorf("%s=%s: %v", EnvSysfs, root, err)
		}
	}
}
