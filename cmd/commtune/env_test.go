package main

import (
	"strings"
	"testing"

	"github.com/commtune/commtune"
)

// TestCLIBadSettings: a variable the CLI checks itself is named with its
// text and what it accepts, as the library names those it reads.
func TestCLIBadSettings(t *testing.T) {
	tests := []struct {
		name, value string
		args        []string
		want        string
	}{
		{commtune.EnvRails, "127.0.0.1", []string{"bench", "multirail"}, `COMMTUNE_RAILS="127.0.0.1": want at least two rails`},
		{commtune.EnvCollPrefix + "BCAST", "nosuch", []string{"info", "--coll"}, `COMMTUNE_COLL_BCAST="nosuch": want an algorithm of bcast`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(tc.name, tc.value)
			r := runCLI(t, tc.args...)
			if r.code == 0 || !strings.Contains(r.stderr, tc.want) {
				t.Fatalf("commtune %s with %s=%s: exit %d, stderr %q; want %q", strings.Join(tc.args, " "), tc.name, tc.value, r.code, r.stderr, tc.want)
			}
		})
	}
}
