package sched

import "testing"

// pollRail is a rail a waiter polls, delivering its input itself or not.
type pollRail struct {
	nopRail
	peer int
	self bool
}

func (r pollRail) Peer() int        { return r.peer }
func (pollRail) Poll() bool         { return false }
func (pollRail) StartPolling()      {}
func (pollRail) StopPolling(bool)   {}
func (pollRail) Attend()            {}
func (r pollRail) SelfPolled() bool { return r.self }

// plainPollRail is a polled rail that does not say whether its Poll needs
// help (driver.SelfPolled): it counts as needing it.
type plainPollRail struct{ pollRail }

func (plainPollRail) SelfPolled() {} // not driver.SelfPolled's signature

// TestSelfPolled: a peer is self-polled when every rail to it is, and
// has one; AnySource (-1) when every peer's are.
func TestSelfPolled(t *testing.T) {
	type railOf struct {
		peer int
		kind string // "self", "helped", "plain", "nopoll"
	}
	tests := []struct {
		name  string
		rails []railOf
		want  map[int]bool // by peer, -1: any
	}{
		{"no rails", nil, map[int]bool{1: false, -1: false}},
		{"shared memory", []railOf{{1, "self"}, {2, "self"}}, map[int]bool{1: true, 2: true, -1: true}},
		{"one tcp peer", []railOf{{1, "self"}, {2, "helped"}}, map[int]bool{1: true, 2: false, -1: false}},
		{"two rails, one helped", []railOf{{1, "self"}, {1, "helped"}}, map[int]bool{1: false, -1: false}},
		{"a rail that does not say", []railOf{{1, "plain"}}, map[int]bool{1: false, -1: false}},
		{"a rail that is not polled", []railOf{{1, "self"}, {1, "nopoll"}}, map[int]bool{1: false, -1: false}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := New(3, nil)
			for _, r := range tc.rails {
				switch r.kind {
				case "self", "helped":
					s.AddRail(pollRail{peer: r.peer, self: r.kind == "self"})
				case "plain":
					s.AddRail(plainPollRail{pollRail{peer: r.peer}})
				case "nopoll":
					s.AddRail(peerRail{peer: r.peer})
				}
			}
			for peer, want := range tc.want {
				if got := s.SelfPolled(peer); got != want {
					t.Errorf("SelfPolled(%d) = %v, want %v", peer, got, want)
				}
			}
		})
	}
}

// peerRail is a rail to peer that no waiter polls.
type peerRail struct {
	nopRail
	peer int
}

func (r peerRail) Peer() int { return r.peer }
