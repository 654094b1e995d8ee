package profiletest

import (
	"slices"
	"testing"

	"github.com/commtune/commtune/internal/profile"
)

// TestKnown checks the thresholds Known's comment promises.
func TestKnown(t *testing.T) {
	fp := profile.Fingerprint{CPU: "test"}
	fp.ID = fp.Sum()
	p := Known(fp)
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	tcp, err := p.Tune("tcp", nil)
	if err != nil {
		t.Fatal(err)
	}
	if tcp.Iovec != 1000 || tcp.Rendezvous != 195999 || tcp.Aggregation != 30000 {
		t.Errorf("tcp: %v", tcp)
	}
	shm, err := p.Tune("shm", nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []profile.Range{{From: 102000, Method: profile.RendezvousVia("copy")}, {From: 1200000, Method: profile.RendezvousVia("cachefree")}}
	if shm.Iovec != 1 || shm.Rendezvous != 101999 || !slices.Equal(shm.Large, want) {
		t.Errorf("shm: %v", shm)
	}
}
