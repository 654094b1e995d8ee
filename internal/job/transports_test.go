package job

import (
	"errors"
	"strings"
	"testing"
)

func TestShmUsable(t *testing.T) {
	unsupported := errors.New("shm: not supported on plan9 (Linux only)")
	tests := []struct {
		name      string
		supported error
		rank      int
		local     []int
		want      bool
		note      string
	}{
		{"supported", nil, 2, []int{2, 3}, true, ""},
		{"unsupported, lowest local rank notes it", unsupported, 2, []int{3, 2, 5}, false,
			"commtune: shm: not supported on plan9 (Linux only); the 3 ranks on this node use tcp\n"},
		{"unsupported, other ranks stay quiet", unsupported, 3, []int{3, 2, 5}, false, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var note strings.Builder
			if got := shmUsable(tc.supported, tc.rank, tc.local, &note); got != tc.want || note.String() != tc.note {
				t.Errorf("shmUsable = %v, note %q; want %v, %q", got, note.String(), tc.want, tc.note)
			}
		})
	}
}
