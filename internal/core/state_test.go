package core

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"testing"
)

// loadStateSpec reads testdata/request_states.txt, the protocol written
// out move by move, into a table.
func loadStateSpec(t *testing.T) *reqTable {
	t.Helper()
	f, err := os.Open("testdata/request_states.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	states := map[string]reqState{}
	for s := stNew; s < numStates; s++ {
		states[s.String()] = s
	}
	events := map[string]reqEvent{}
	for ev := reqEvent(0); ev < numEvents; ev++ {
		events[ev.String()] = ev
	}
	var spec reqTable
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		text, _, _ := strings.Cut(sc.Text(), "#")
		fields := strings.Fields(text)
		if len(fields) == 0 {
			continue
		}
		if len(fields) != 3 {
			t.Fatalf("line %d: %q: want state, event, next state", line, sc.Text())
		}
		from, okFrom := states[fields[0]]
		ev, okEv := events[fields[1]]
		to, okTo := states[fields[2]]
		switch {
		case !okFrom || !okTo:
			t.Fatalf("line %d: unknown state in %q", line, sc.Text())
		case !okEv:
			t.Fatalf("line %d: unknown event %q", line, fields[1])
		case to == stNew:
			t.Fatalf("line %d: nothing moves a request back to new", line)
		case spec[from][ev] != stNew:
			t.Fatalf("line %d: %v %v given twice", line, from, ev)
		}
		spec[from][ev] = to
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return &spec
}

// mover moves a request in state s by ev: the next state, and whether the
// event was accepted.
type mover func(s reqState, ev reqEvent) (reqState, bool)

// requestMove moves a Request by its own method, as the engine does.
func requestMove(s reqState, ev reqEvent) (reqState, bool) {
	r := &Request{state: s}
	ok := r.move(ev)
	return r.state, ok
}

// tableMove moves by t, a table other than the engine's.
func tableMove(t *reqTable) mover {
	return func(s reqState, ev reqEvent) (reqState, bool) {
		ok := t.apply(&s, ev)
		return s, ok
	}
}

func moveName(s reqState, ok bool) string {
	if !ok {
		return "refused"
	}
	return s.String()
}

// Where the user's memory may be in use by the rails, or by a peer's read
// or a put landing in it: a Cancel there would hand back memory still
// being read or written.
var busyStates = []reqState{stEager, stBulk, stMatched, stPulling, stLanding}

// checkStates enumerates every (state, event) pair moved by move and
// reports each way it departs from spec, and each property it breaks:
// every state is reachable from new and can still complete; done accepts
// nothing; Cancel is refused wherever memory is busy, and a withdraw once
// the read has begun.
func checkStates(move mover, spec *reqTable) []string {
	var probs []string
	for s := stNew; s < numStates; s++ {
		for ev := reqEvent(0); ev < numEvents; ev++ {
			got, ok := move(s, ev)
			want := spec[s][ev]
			switch {
			case !ok && got != s:
				probs = append(probs, fmt.Sprintf("%v --%v--> refused, but moved to %v", s, ev, got))
			case !ok && want != stNew, ok && (want == stNew || got != want):
				probs = append(probs, fmt.Sprintf("%v --%v--> %v: want %v", s, ev, moveName(got, ok), moveName(want, want != stNew)))
			}
		}
	}

	// Reachable from new, forwards; able to reach done, backwards.
	reach := func(from reqState, forward bool) [numStates]bool {
		var seen [numStates]bool
		seen[from] = true
		for changed := true; changed; {
			changed = false
			for s := stNew; s < numStates; s++ {
				for ev := reqEvent(0); ev < numEvents; ev++ {
					to, ok := move(s, ev)
					if !ok {
						continue
					}
					a, b := s, to
					if !forward {
						a, b = to, s
					}
					if seen[a] && !seen[b] {
						seen[b], changed = true, true
					}
				}
			}
		}
		return seen
	}
	fromNew, toDone := reach(stNew, true), reach(stDone, false)
	for s := stNew; s < numStates; s++ {
		if !fromNew[s] {
			probs = append(probs, fmt.Sprintf("%v is unreachable", s))
		}
		if !toDone[s] {
			probs = append(probs, fmt.Sprintf("%v can never complete", s))
		}
	}

	for ev := reqEvent(0); ev < numEvents; ev++ {
		if _, ok := move(stDone, ev); ok {
			probs = append(probs, fmt.Sprintf("done, terminal, accepts %v", ev))
		}
	}
	for _, s := range busyStates {
		if to, ok := move(s, evCancel); ok {
			probs = append(probs, fmt.Sprintf("cancel accepted in %v (to %v), where memory is in use", s, to))
		}
	}
	if _, ok := move(stPulling, evWithdraw); ok {
		probs = append(probs, "withdraw accepted in pulling: the sender would take back a buffer being read")
	}
	return probs
}

// TestRequestStates checks the engine's table, through Request.move, pair
// by pair against the written protocol.
func TestRequestStates(t *testing.T) {
	spec := loadStateSpec(t)
	for _, p := range checkStates(requestMove, spec) {
		t.Error(p)
	}
	// The written protocol has the properties too.
	for _, p := range checkStates(tableMove(spec), spec) {
		t.Errorf("testdata: %s", p)
	}
}

// TestRequestStatesCatchBrokenTables checks the check: each deliberate
// breakage of a copy of the table must be reported, with the words given.
func TestRequestStatesCatchBrokenTables(t *testing.T) {
	spec := loadStateSpec(t)
	for _, tc := range []struct {
		name     string
		breakage func(*reqTable)
		want     []string
	}{
		{"cancel after the bulk started", func(t *reqTable) { t[stBulk][evCancel] = stDone },
			[]string{"bulk --cancel--> done: want refused", "cancel accepted in bulk"}},
		{"cancel while pushed data lands", func(t *reqTable) { t[stLanding][evCancel] = stScrap },
			[]string{"landing --cancel--> scrap: want refused", "cancel accepted in landing"}},
		{"withdraw while the read runs", func(t *reqTable) { t[stPulling][evWithdraw] = stDone },
			[]string{"pulling --withdraw--> done: want refused", "withdraw accepted in pulling"}},
		{"done accepts close", func(t *reqTable) { t[stDone][evClose] = stDone },
			[]string{"done --close--> done: want refused", "done, terminal, accepts close"}},
		{"cancel of a pulled send ends it at once", func(t *reqTable) { t[stPullRTS][evCancel] = stDone },
			[]string{"pull-rts --cancel--> done: want withdrawing", "withdrawing is unreachable"}},
		{"FIN for a pushed send", func(t *reqTable) { t[stRTS][evFIN] = stDone },
			[]string{"rts --fin--> done: want refused"}},
		{"an eager send never completes", func(t *reqTable) { t[stEager][evSent] = stNew },
			[]string{"eager --sent--> refused: want done", "eager can never complete"}},
		{"a cancelled exposure forgets its region", func(t *reqTable) { t[stExposed][evCancel] = stDone },
			[]string{"exposed --cancel--> done: want scrap", "scrap is unreachable"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			broken := reqMoves // a copy
			tc.breakage(&broken)
			probs := checkStates(tableMove(&broken), spec)
			all := strings.Join(probs, "\n")
			t.Logf("reported:\n%s", all)
			for _, w := range tc.want {
				if !strings.Contains(all, w) {
					t.Errorf("not reported: %q", w)
				}
			}
		})
	}
}

// checkEngineStates checks that where e keeps each pending request agrees
// with its state: the engine finds requests by these lists and maps and
// trusts the state they imply.
func (e *Engine) checkEngineStates() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, c := range e.ctxs {
		for r := c.postedHead; r != nil; r = r.next {
			if r.state != stPosted {
				return fmt.Errorf("rank %d: %v request in a posted list", e.rank, r.state)
			}
		}
	}
	for id, r := range e.sends {
		switch r.state {
		case stRTS, stPullRTS, stWithdrawing:
		default:
			return fmt.Errorf("rank %d: %v request in sends as %d", e.rank, r.state, id)
		}
	}
	for h, r := range e.regions {
		switch r.state {
		case stMatched, stPulling, stExposed, stLanding, stScrap:
		default:
			return fmt.Errorf("rank %d: %v request in regions as %d", e.rank, r.state, h)
		}
	}
	return nil
}
