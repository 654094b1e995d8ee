package setting

import (
	"errors"
	"testing"
	"time"
)

func TestMessages(t *testing.T) {
	cause := errors.New("no such file")
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"variable", Bad(Env("COMMTUNE_SHM_RING", "3000"), "a power of two from %s", "4K"),
			`COMMTUNE_SHM_RING="3000": want a power of two from 4K`},
		{"blank shows", Bad(Env("COMMTUNE_NODE", ""), "a node name"), `COMMTUNE_NODE="": want a node name`},
		{"percent in the value is not a verb", Bad(Env("COMMTUNE_SPLIT", "%d"), "curves"), `COMMTUNE_SPLIT="%d": want curves`},
		{"field", Bad(Field("Config.Shm.Ring", 3000), "a power of two"), `Config.Shm.Ring=3000: want a power of two`},
		{"duration field", Bad(Field("Config.ConnectTimeout", -time.Second), "a positive duration"),
			`Config.ConnectTimeout=-1s: want a positive duration`},
		{"secret", Bad(Secret("COMMTUNE_KEY"), "64 hex digits (%v)", cause), `COMMTUNE_KEY: want 64 hex digits (no such file)`},
		{"conflict", Conflict(Env("COMMTUNE_SHM_CHUNK", "1M"), Field("Config.Shm.Ring", 65536), "at most a quarter of the ring"),
			`COMMTUNE_SHM_CHUNK="1M" with Config.Shm.Ring=65536: want at most a quarter of the ring`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.err.Error(); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
	if err := Bad(Env("COMMTUNE_SYSFS", "/x"), "a copy of /sys (%w)", cause); !errors.Is(err, cause) {
		t.Errorf("%v does not wrap its cause", err)
	}
}
