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

// groupRail is a polled rail of a poll group that counts its polls.
type groupRail struct {
	pollRail
	group string
	polls *int
}

func (r groupRail) Poll() bool       { *r.polls++; return false }
func (r groupRail) PollGroup() any   { return r.group }
func (r groupRail) SelfPolled() bool { return true }

// TestPollGroups: polling every peer polls one rail of each poll group
// (and every rail of none); polling one peer polls that peer's rails.
func TestPollGroups(t *testing.T) {
	tests := []struct {
		name      string
		groups    []string // one rail per peer 1, 2, …; "" for no group
		wantAny   int      // polls of Poll(-1)
		wantPeer2 int      // polls of Poll(2)
	}{
		{"one transport's rails", []string{"shm", "shm", "shm"}, 1, 1},
		{"two groups", []string{"shm", "other", "shm"}, 2, 1},
		{"no groups", []string{"", "", ""}, 3, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := New(len(tc.groups)+1, nil)
			polls := 0
			for i, g := range tc.groups {
				if g == "" {
					s.AddRail(ungroupedRail{pollRail{peer: i + 1, self: true}, &polls})
				} else {
					s.AddRail(groupRail{pollRail{peer: i + 1, self: true}, g, &polls})
				}
			}
			s.Poll(-1)
			if polls != tc.wantAny {
				t.Errorf("Poll(-1) polled %d rails, want %d", polls, tc.wantAny)
			}
			polls = 0
			s.Poll(2)
			if polls != tc.wantPeer2 {
				t.Errorf("Poll(2) polled %d rails, want %d", polls, tc.wantPeer2)
			}
		})
	}
}

// ungroupedRail is a polled rail of no group that counts its polls.
type ungroupedRail struct {
	pollRail
	polls *int
}

func (r ungroupedRail) Poll() bool { *r.polls++; return false }
