package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/commtune/commtune/internal/driver/shm"
)

func TestInfoShm(t *testing.T) {
	cases := []struct {
		name, ring, budget, queue string
		wantErr                   string
	}{
		{"defaults", "", "", "", ""},
		{"a ring set", "262144", "", "", ""},
		{"a budget set", "", "1M", "", ""},
		{"queues off", "", "", "off", ""},
		{"queues on", "", "", "on", ""},
		{"a bad ring", "3", "", "", "COMMTUNE_SHM_RING"},
		{"a bad budget", "", "12", "", "COMMTUNE_SHM_BUDGET"},
		{"a bad queue mode", "", "", "sometimes", "COMMTUNE_SHM_QUEUE"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("COMMTUNE_SHM_RING", tc.ring)
			t.Setenv("COMMTUNE_SHM_BUDGET", tc.budget)
			t.Setenv("COMMTUNE_SHM_QUEUE", tc.queue)
			rep, err := collectShm(infoOptions{})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want one naming %s", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			r := rep.(*shmInfo)
			if len(r.Sizes) < len(shmInfoRanks) {
				t.Fatalf("%d sizes", len(r.Sizes))
			}
			for _, s := range r.Sizes {
				ring := 0
				if tc.ring != "" {
					ring = 262144
				}
				budget := 0
				if tc.budget != "" {
					budget = 1 << 20
				}
				f, _ := shm.FootprintFor(s.LocalRanks, ring, 0, budget, shm.QueueModeOf(tc.queue))
				if wantQueue := tc.queue == "on" || tc.queue == "" && s.LocalRanks > shm.QueueRanks; s.Queue != wantQueue {
					t.Errorf("%d ranks: queue %v, want %v", s.LocalRanks, s.Queue, wantQueue)
				}
				if s.RingBytes != f.RingSize || s.PeerFirst != f.PeerFirst || s.Budget != f.Budget || s.RankTalk != f.Talking ||
					s.NodeTalk != int64(s.LocalRanks)*f.Talking || s.RankMax != f.Max || s.NodeMax != int64(s.LocalRanks)*f.Max {
					t.Errorf("%d ranks: %+v, want %+v", s.LocalRanks, s, f)
				}
			}
			var b bytes.Buffer
			if err := r.writeText(&b); err != nil || !strings.Contains(b.String(), "per talking peer") {
				t.Fatalf("text %q, %v", b.String(), err)
			}
		})
	}
}
