package boot

import (
	"fmt"
	"strings"
	"testing"
)

// storeStep is one event in a store scenario: a request from rank, (lost)
// the end of rank's connection, or (report) the launcher reporting rank
// lost. fresh sends the request on a new connection that has not said
// HELLO, whatever the rank's earlier connection did.
type storeStep struct {
	rank   int
	m      message
	lost   bool
	report bool
	fresh  bool
	want   string // renderOutcome of the result
}

func hello(rank, size int) message {
	return message{op: opHello, id: 1, rank: uint32(rank), size: uint32(size)}
}
func put(id uint32, k, v string) message {
	return message{op: opPut, id: id, key: k, value: v}
}
func get(id uint32, k string) message       { return message{op: opGet, id: id, key: k} }
func fence(id uint32, epoch uint64) message { return message{op: opFence, id: id, epoch: epoch} }
func abortMsg(id uint32, code int32) message {
	return message{op: opAbort, id: id, code: code, text: "bad"}
}

var codeNames = map[int32]string{
	int32(codeMalformed): "malformed", int32(codeRefused): "refused", int32(codeLimit): "limit",
	int32(codeConflict): "conflict", int32(codeRankGone): "rankgone",
}

func renderMsg(m message) string {
	switch m.op {
	case opOK:
		return fmt.Sprintf("OK#%d", m.id)
	case opValue:
		return fmt.Sprintf("VALUE#%d=%q", m.id, m.value)
	case opFenced:
		return fmt.Sprintf("FENCED#%d@%d", m.id, m.epoch)
	case opErr:
		return fmt.Sprintf("ERR#%d %s", m.id, codeNames[m.code])
	case opLost:
		return fmt.Sprintf("LOST#%d %d", m.id, m.rank)
	}
	return fmt.Sprintf("%v#%d", m.op, m.id)
}

func renderOutcome(o outcome) string {
	var parts []string
	if o.reply != nil {
		parts = append(parts, renderMsg(*o.reply))
	}
	for _, d := range o.out {
		parts = append(parts, fmt.Sprintf("→%d %s", d.rank, renderMsg(d.msg)))
	}
	if o.event != nil {
		parts = append(parts, fmt.Sprintf("event %v %d code %d", o.event.Kind, o.event.Rank, o.event.Code))
	}
	return strings.Join(parts, "; ")
}

// joinAll returns HELLO steps for ranks 0..size-1.
func joinAll(size int) []storeStep {
	var steps []storeStep
	for r := range size {
		steps = append(steps, storeStep{rank: r, m: hello(r, size), want: "OK#1"})
	}
	return steps
}

func TestStore(t *testing.T) {
	tests := []struct {
		name  string
		size  int
		lim   limits
		steps []storeStep
	}{
		{"put then get", 2, defaultLimits, append(joinAll(2),
			storeStep{rank: 0, m: put(2, "addr/0", "h:1"), want: "OK#2"},
			storeStep{rank: 1, m: get(2, "addr/0"), want: `VALUE#2="h:1"`},
		)},
		{"get waits for put", 2, defaultLimits, append(joinAll(2),
			storeStep{rank: 1, m: get(5, "k"), want: ""},
			storeStep{rank: 1, m: get(6, "k"), want: ""},
			storeStep{rank: 0, m: put(2, "k", "v"), want: `OK#2; →1 VALUE#5="v"; →1 VALUE#6="v"`},
			storeStep{rank: 0, m: put(3, "other", "v"), want: "OK#3"},
		)},
		{"same value again is fine, another conflicts", 1, defaultLimits, append(joinAll(1),
			storeStep{rank: 0, m: put(2, "k", "v"), want: "OK#2"},
			storeStep{rank: 0, m: put(3, "k", "v"), want: "OK#3"},
			storeStep{rank: 0, m: put(4, "k", "w"), want: "ERR#4 conflict"},
			storeStep{rank: 0, m: get(5, "k"), want: `VALUE#5="v"`},
		)},
		{"key and value limits", 1, defaultLimits, append(joinAll(1),
			storeStep{rank: 0, m: put(2, "", "v"), want: "ERR#2 refused"},
			storeStep{rank: 0, m: get(3, ""), want: "ERR#3 refused"},
			storeStep{rank: 0, m: put(4, strings.Repeat("k", MaxKey+1), "v"), want: "ERR#4 limit"},
			storeStep{rank: 0, m: get(5, strings.Repeat("k", MaxKey+1)), want: "ERR#5 limit"},
			storeStep{rank: 0, m: put(6, "k", strings.Repeat("v", MaxValue+1)), want: "ERR#6 limit"},
			storeStep{rank: 0, m: put(7, strings.Repeat("k", MaxKey), strings.Repeat("v", MaxValue)), want: "OK#7"},
		)},
		{"store full", 1, limits{store: 2 * (entryCost + 2), waiting: 4}, append(joinAll(1),
			storeStep{rank: 0, m: put(2, "a", "1"), want: "OK#2"},
			storeStep{rank: 0, m: put(3, "b", "2"), want: "OK#3"},
			storeStep{rank: 0, m: put(4, "c", "3"), want: "ERR#4 limit"},
			storeStep{rank: 0, m: put(5, "a", "1"), want: "OK#5"}, // already there: costs nothing
		)},
		{"waiting limit and cancel", 2, limits{store: 1 << 20, waiting: 2}, append(joinAll(2),
			storeStep{rank: 1, m: get(2, "x"), want: ""},
			storeStep{rank: 1, m: get(3, "y"), want: ""},
			storeStep{rank: 1, m: get(4, "z"), want: "ERR#4 limit"},
			storeStep{rank: 1, m: message{op: opCancel, id: 2}, want: ""},
			storeStep{rank: 1, m: message{op: opCancel, id: 99}, want: ""}, // unknown: ignored
			storeStep{rank: 1, m: get(5, "z"), want: ""},
			storeStep{rank: 1, m: get(5, "w"), want: "ERR#5 refused"}, // id already waiting
			storeStep{rank: 0, m: put(2, "x", "1"), want: "OK#2"},     // its GET was cancelled
			storeStep{rank: 0, m: put(3, "z", "3"), want: `OK#3; →1 VALUE#5="3"`},
		)},
		{"fence epochs", 3, defaultLimits, append(joinAll(3),
			storeStep{rank: 0, m: put(2, "a", "0"), want: "OK#2"},
			storeStep{rank: 0, m: fence(3, 1), want: ""},
			storeStep{rank: 0, m: fence(4, 1), want: "ERR#4 refused"}, // already in it
			storeStep{rank: 2, m: fence(7, 2), want: "ERR#7 refused"}, // wrong epoch
			storeStep{rank: 2, m: fence(8, 1), want: ""},
			storeStep{rank: 1, m: fence(9, 1), want: "→0 FENCED#3@1; →1 FENCED#9@1; →2 FENCED#8@1"},
			storeStep{rank: 1, m: fence(10, 2), want: ""},
			storeStep{rank: 1, m: fence(11, 1), want: "ERR#11 refused"},
		)},
		{"lost rank fails the fence", 3, defaultLimits, append(joinAll(3),
			storeStep{rank: 0, m: fence(2, 1), want: ""},
			storeStep{rank: 1, m: fence(2, 1), want: ""},
			storeStep{rank: 2, lost: true, want: "→0 ERR#2 rankgone; →1 ERR#2 rankgone; event lost 2 code 0"},
			storeStep{rank: 0, m: fence(3, 2), want: "ERR#3 rankgone"},
			storeStep{rank: 1, m: put(3, "k", "v"), want: "OK#3"}, // the store still serves
		)},
		{"a rank reported lost before it joined fails the fence", 3, defaultLimits, []storeStep{
			{rank: 0, m: hello(0, 3), want: "OK#1"},
			{rank: 1, m: hello(1, 3), want: "OK#1"},
			{rank: 0, m: fence(2, 1), want: ""},
			{rank: 2, report: true, want: "→0 ERR#2 rankgone"},
			{rank: 1, m: fence(2, 1), want: "ERR#2 rankgone"},
			{rank: 2, m: hello(2, 3), fresh: true, want: "ERR#1 refused"},
		}},
		{"bye then a fence cannot complete", 2, defaultLimits, append(joinAll(2),
			storeStep{rank: 0, m: fence(2, 1), want: ""},
			storeStep{rank: 1, m: fence(2, 1), want: "→0 FENCED#2@1; →1 FENCED#2@1"},
			storeStep{rank: 0, m: message{op: opBye, id: 3}, want: "OK#3"},
			storeStep{rank: 1, m: fence(3, 2), want: "ERR#3 rankgone"},
		)},
		{"lost rank's gets are dropped", 2, defaultLimits, append(joinAll(2),
			storeStep{rank: 1, m: get(2, "k"), want: ""},
			storeStep{rank: 1, lost: true, want: "event lost 1 code 0"},
			storeStep{rank: 0, m: put(2, "k", "v"), want: "OK#2"},
		)},
		{"hello refusals", 2, defaultLimits, []storeStep{
			{rank: 0, m: put(1, "k", "v"), want: "ERR#1 refused"}, // before HELLO
			{rank: 0, m: hello(1, 2), want: "ERR#1 refused"},      // names another rank
			{rank: 0, m: hello(0, 3), want: "ERR#1 refused"},      // wrong size
			{rank: 5, m: hello(5, 2), want: "ERR#1 refused"},      // out of range
			{rank: 0, m: hello(0, 2), want: "OK#1"},
			{rank: 0, m: hello(0, 2), want: "ERR#1 refused"},              // twice on one connection
			{rank: 0, m: hello(0, 2), fresh: true, want: "ERR#1 refused"}, // rank already connected
			{rank: 0, lost: true, want: "event lost 0 code 0"},
			{rank: 0, m: hello(0, 2), fresh: true, want: "ERR#1 refused"}, // rank already left
		}},
		{"abort is reported once", 2, defaultLimits, append(joinAll(2),
			storeStep{rank: 1, m: abortMsg(2, 7), want: "OK#2; event abort 1 code 7"},
			storeStep{rank: 1, m: abortMsg(3, 8), want: "OK#3"},
		)},
		{"a reply sent as a request", 1, defaultLimits, append(joinAll(1),
			storeStep{rank: 0, m: message{op: opOK, id: 2}, want: "ERR#2 malformed"},
		)},
		{"losses go to the watching ranks still joined", 4, defaultLimits, append(joinAll(4),
			storeStep{rank: 0, m: message{op: opWatch, id: 2}, want: "OK#2"},
			storeStep{rank: 1, m: message{op: opWatch, id: 3}, want: "OK#3"},
			storeStep{rank: 1, m: message{op: opWatch, id: 4}, want: "ERR#4 refused"}, // once
			storeStep{rank: 2, lost: true, want: "event lost 2 code 0"},
			storeStep{rank: 2, report: true, want: "→0 LOST#2 2; →1 LOST#3 2"},
			storeStep{rank: 2, report: true, want: ""}, // told once
			storeStep{rank: 1, m: message{op: opBye, id: 5}, want: "OK#5"},
			storeStep{rank: 3, report: true, want: "→0 LOST#2 3"}, // rank 1 left, rank 3 is not told of itself
			storeStep{rank: 7, report: true, want: ""},            // out of range
		)},
		{"a late watch hears of the losses before it", 3, defaultLimits, append(joinAll(3),
			storeStep{rank: 2, report: true, want: ""},
			storeStep{rank: 0, report: true, want: ""},
			storeStep{rank: 0, m: message{op: opWatch, id: 9}, want: "OK#9; →0 LOST#9 2"},
			storeStep{rank: 1, m: message{op: opWatch, id: 0}, want: "ERR#0 refused"},
			storeStep{rank: 1, m: message{op: opWatch, id: 3}, want: "OK#3; →1 LOST#3 0; →1 LOST#3 2"},
		)},
		{"watch before hello", 1, defaultLimits, []storeStep{
			{rank: 0, m: message{op: opWatch, id: 1}, want: "ERR#1 refused"},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newStore(tc.size, tc.lim)
			joined := map[int]bool{}
			for i, st := range tc.steps {
				var o outcome
				if st.lost {
					o = s.lost(st.rank)
				} else if st.report {
					o = s.reportLost(st.rank)
				} else {
					o = s.handle(st.rank, joined[st.rank] && !st.fresh, &st.m)
				}
				if o.joined {
					joined[st.rank] = true
				}
				if got := renderOutcome(o); got != st.want {
					t.Fatalf("step %d (rank %d %v):\n got %q\nwant %q", i, st.rank, st.m.op, got, st.want)
				}
			}
		})
	}
}
