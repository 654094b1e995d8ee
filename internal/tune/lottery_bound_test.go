package tune

import "testing"

// TestLotteryBoundsKeys: the keys learned stay at most maxKeys, the least
// recently used going first, also after a restored state larger than the
// bound.
func TestLotteryBoundsKeys(t *testing.T) {
	key := func(i int) Key { return Key{Op: "allreduce", Ranks: 2 + i%7, SizeClass: i / 7, Transports: "tcp"} }
	cands := []string{"a", "b"}
	tests := []struct {
		name     string
		restored int // keys in a state restored first
	}{{"learned", 0}, {"restored beyond the bound", 3 * maxKeys}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l, err := NewLottery(LotteryConfig{Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			if tc.restored > 0 {
				st := State{Keys: map[Key]map[string]Stats{}}
				for i := range tc.restored {
					st.Keys[Key{Op: "bcast", Ranks: 3, SizeClass: i, Transports: "tcp"}] = map[string]Stats{"a": {Calls: 1, Avg: 1e-6}}
				}
				if err := l.Restore(st); err != nil {
					t.Fatal(err)
				}
			}
			hot := key(0)
			for i := range maxKeys + 100 {
				l.Choose(key(i), cands)
				l.Record(hot, "a", 1000) // key 0 stays recently used
			}
			if n := len(l.keys); n > maxKeys {
				t.Fatalf("%d keys learned, want at most %d", n, maxKeys)
			}
			if l.keys[hot] == nil {
				t.Fatal("the key used at every call went")
			}
			if l.keys[key(1)] != nil {
				t.Fatal("the least recently used key stayed")
			}
			if l.keys[key(maxKeys+99)] == nil {
				t.Fatal("the newest key went")
			}
		})
	}
}
