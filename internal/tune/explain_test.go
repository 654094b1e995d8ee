package tune

import (
	"testing"
	"time"
)

func TestExplain(t *testing.T) {
	k := Key{Op: "bcast", Ranks: 4, SizeClass: 10, Transports: "shm"}
	other := Key{Op: "allreduce", Ranks: 4, SizeClass: 10, Transports: "shm"}
	l, err := NewLottery(LotteryConfig{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		jitter := time.Duration(i%3) * 3 * time.Microsecond
		l.Record(k, "fast", 100*time.Microsecond+jitter)
		l.Record(k, "close", 104*time.Microsecond+jitter)
	}
	l.Record(k, "hopeless", 5*time.Millisecond)
	l.Record(other, "ring", time.Millisecond)
	if got := l.Keys(); len(got) != 2 || got[0] != other || got[1] != k {
		t.Fatalf("Keys() = %v, want [%v %v]", got, other, k)
	}
	got := l.Explain(k)
	// close, a contender on 20 samples, keeps Settle/20 of its share.
	closeShare := (1 - DefaultAlpha) * DefaultSettle / 20
	want := []struct {
		impl  string
		share float64
		best  bool
	}{{"fast", 1 - closeShare, true}, {"close", closeShare, false}, {"hopeless", 0, false}}
	if len(got) != len(want) {
		t.Fatalf("Explain = %+v, want %d standings", got, len(want))
	}
	for i, w := range want {
		g := got[i]
		if g.Impl != w.impl || g.Best != w.best || g.Share < w.share-1e-9 || g.Share > w.share+1e-9 {
			t.Errorf("standing %d = %+v, want %s share %.2f best %v", i, g, w.impl, w.share, w.best)
		}
	}
	if got[0].Calls != 20 || got[0].Avg < 100*time.Microsecond || got[0].Avg > 104*time.Microsecond || got[0].Sigma <= 0 {
		t.Errorf("fast: %+v, want 20 calls averaging 100-104µs with some spread", got[0])
	}
	if l.Explain(Key{Op: "gather"}) != nil {
		t.Error("an unknown key has standings")
	}
	// Explaining does not disturb drawing: the next choice is still among
	// the candidates given.
	if ch := l.Choose(k, []string{"fast", "close"}); ch.Impl != "fast" && ch.Impl != "close" {
		t.Errorf("Choose after Explain = %+v", ch)
	}
}
