package job

import (
	"strings"
	"testing"

	"github.com/commtune/commtune/internal/config"
	"github.com/commtune/commtune/internal/driver"
)

// namedRail is a rail that only names its transport: Ready looks at
// capabilities before anything is sent.
type namedRail struct {
	transport string
	peer      int
}

func (r namedRail) Caps() driver.Caps                { return driver.Caps{Transport: r.transport} }
func (r namedRail) Peer() int                        { return r.peer }
func (r namedRail) Post(*driver.Frame) (bool, error) { return true, nil }

// TestReadyOneTransportEach: a peer reached by rails of two transports is
// refused, since its plan and Transport are one transport's; rails of one
// transport are accepted.
func TestReadyOneTransportEach(t *testing.T) {
	tests := []struct {
		name    string
		rails   []string
		wantErr string
	}{
		{"one rail", []string{"tcp"}, ""},
		{"two rails of one transport", []string{"tcp", "tcp"}, ""},
		{"two transports", []string{"shm", "tcp"}, "rails of shm and tcp"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := config.Config{}
			ep, err := NewEndpoint(0, 2, cfg)
			if err != nil {
				t.Fatal(err)
			}
			for _, tr := range tt.rails {
				ep.Sched.AddRail(namedRail{transport: tr, peer: 1})
			}
			err = ep.oneTransportEach()
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("got %v, want %q", err, tt.wantErr)
			}
			if err == nil && ep.Transport(1) != tt.rails[0] {
				t.Fatalf("Transport(1) = %q, want %q", ep.Transport(1), tt.rails[0])
			}
		})
	}
}
