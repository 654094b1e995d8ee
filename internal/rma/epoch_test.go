package rma

import (
	"errors"
	"testing"
)

// TestEpochs runs sequences of synchronisations through the epoch state
// and checks which are refused (ErrEpoch) and which targets may then be
// accessed.
func TestEpochs(t *testing.T) {
	type step struct {
		call    string
		ranks   []int
		refused bool
	}
	cases := []struct {
		name   string
		steps  []step
		access map[int]bool // after the steps
	}{
		{"nothing open", nil, map[int]bool{0: false, 1: false}},
		{"fence opens every target", []step{{"fence", nil, false}}, map[int]bool{0: true, 3: true}},
		{"lock one", []step{{"lock", []int{2}, false}}, map[int]bool{2: true, 1: false}},
		{"lock twice", []step{{"lock", []int{2}, false}, {"lock", []int{2}, true}}, map[int]bool{2: true}},
		{"unlock unlocked", []step{{"unlock", []int{1}, true}}, map[int]bool{1: false}},
		{"lock unlock", []step{{"lock", []int{1}, false}, {"unlock", []int{1}, false}}, map[int]bool{1: false}},
		{"lockall", []step{{"lockall", nil, false}}, map[int]bool{0: true, 5: true}},
		{"lock inside lockall", []step{{"lockall", nil, false}, {"lock", []int{1}, true}}, map[int]bool{1: true}},
		{"lockall over a lock", []step{{"lock", []int{1}, false}, {"lockall", nil, true}}, map[int]bool{1: true, 2: false}},
		{"unlockall alone", []step{{"unlockall", nil, true}}, nil},
		{"fence inside lock", []step{{"lock", []int{1}, false}, {"fence", nil, true}}, map[int]bool{1: true, 2: false}},
		{"start", []step{{"start", []int{1, 3}, false}}, map[int]bool{1: true, 2: false, 3: true}},
		{"start twice", []step{{"start", []int{1}, false}, {"start", []int{2}, true}}, map[int]bool{1: true, 2: false}},
		{"complete closes", []step{{"start", []int{1}, false}, {"complete", nil, false}}, map[int]bool{1: false}},
		{"complete alone", []step{{"complete", nil, true}}, nil},
		{"start ends a fence epoch", []step{{"fence", nil, false}, {"start", []int{1}, false}}, map[int]bool{1: true, 2: false}},
		{"post and wait", []step{{"post", []int{0}, false}, {"wait", nil, false}}, nil},
		{"wait alone", []step{{"wait", nil, true}}, nil},
		{"post twice", []step{{"post", []int{0}, false}, {"post", []int{1}, true}}, nil},
		{"free with a lock", []step{{"lock", []int{1}, false}, {"free", nil, true}}, nil},
		{"free with a post", []step{{"post", []int{1}, false}, {"free", nil, true}}, nil},
		{"free with a start", []step{{"start", []int{1}, false}, {"free", nil, true}}, nil},
		{"free after a fence", []step{{"fence", nil, false}, {"free", nil, false}}, nil},
		{"flush needs a lock", []step{{"fence", nil, false}, {"flush", []int{1}, true}}, nil},
		{"flush inside lockall", []step{{"lockall", nil, false}, {"flush", []int{1}, false}}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEpochs(8)
			for i, s := range tc.steps {
				var err error
				switch s.call {
				case "fence":
					err = e.startFence()
				case "lock":
					err = e.lock(s.ranks[0], Exclusive)
				case "unlock":
					_, err = e.unlock(s.ranks[0])
				case "lockall":
					err = e.startLockAll()
				case "unlockall":
					err = e.endLockAll()
				case "start":
					err = e.start(s.ranks)
				case "complete":
					_, err = e.complete()
				case "post":
					err = e.post(s.ranks)
				case "wait":
					_, err = e.wait()
				case "free":
					err = e.free()
				case "flush":
					err = e.passive(s.ranks[0], "Flush")
				}
				if s.refused != (err != nil) || err != nil && !errors.Is(err, ErrEpoch) {
					t.Fatalf("step %d %s%v: error %v, want refused %v", i, s.call, s.ranks, err, s.refused)
				}
			}
			for r, want := range tc.access {
				if got := e.access(r, "Put") == nil; got != want {
					t.Errorf("access to %d: %v, want %v", r, got, want)
				}
				if got := e.open(r); got != want {
					t.Errorf("open(%d) = %v, want %v (the mirror disagrees)", r, got, want)
				}
				if got := e.passive(r, "Flush") == nil; got != e.passiveOpen(r) {
					t.Errorf("passiveOpen(%d) = %v, passive says %v", r, e.passiveOpen(r), got)
				}
			}
		})
	}
	e := newEpochs(2)
	if err := e.lock(1, LockKind(7)); err == nil || errors.Is(err, ErrEpoch) {
		t.Errorf("lock of kind 7: %v, want a bad-argument error", err)
	}
}
