package core

import (
	"strings"
	"testing"
)

func TestValidateNamesTheField(t *testing.T) {
	tests := []struct {
		c    Config
		want string // in the error; "" for none
	}{
		{Config{}, ""},
		{Config{RendezvousThreshold: 1 << 20, UnexpectedLimit: 1}, ""},
		{Config{RendezvousThreshold: -1}, "core.Config.RendezvousThreshold=-1: want a size in bytes"},
		{Config{UnexpectedLimit: -2}, "core.Config.UnexpectedLimit=-2: want a size in bytes"},
	}
	for _, tc := range tests {
		err := tc.c.Validate()
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%+v: %v, want %q", tc.c, err, tc.want)
		}
	}
}
