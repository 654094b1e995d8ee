package tune

import (
	"cmp"
	"slices"
	"time"
)

// Standing is one implementation's place in a key's lottery.
type Standing struct {
	Impl  string
	Avg   time.Duration // exponential average of its running time
	Sigma time.Duration // standard deviation around it
	Calls int64         // samples behind them
	// Share is the part of the tickets it would hold in a draw among every
	// implementation known for the key (0 for one the lottery excludes).
	Share float64
	// Best marks the implementation the lottery favours: the one it runs
	// first when a job starts from this state.
	Best bool
}

// Keys returns the keys l knows, in text order.
func (l *Lottery) Keys() []Key {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]Key, 0, len(l.keys))
	for k := range l.keys {
		out = append(out, k)
	}
	slices.SortFunc(out, func(a, b Key) int { return cmp.Compare(a.String(), b.String()) })
	return out
}

// Explain returns the standings of k's measured implementations, fastest
// average first, with the shares a draw among all of them would give: what
// `commtune info --coll` shows of a saved state. It does not draw.
func (l *Lottery) Explain(k Key) []Standing {
	l.mu.Lock()
	defer l.mu.Unlock()
	ks := l.keys[k]
	if ks == nil {
		return nil
	}
	var names []string
	for name, c := range ks.impls {
		if c.Calls > 0 {
			names = append(names, name)
		}
	}
	slices.SortFunc(names, func(a, b string) int {
		return cmp.Or(cmp.Compare(ks.impls[a].Avg, ks.impls[b].Avg), cmp.Compare(a, b))
	})
	if len(names) == 0 {
		return nil
	}
	saved := ks.cands
	ks.cands = nil // setCandidates reuses a list only when it is the same
	ks.setCandidates(names)
	b := l.tickets(ks)
	out := make([]Standing, len(ks.cands))
	for i, c := range ks.cands {
		out[i] = Standing{Impl: c.name, Avg: seconds(c.Avg), Sigma: seconds(c.Std()), Calls: c.Calls,
			Share: ks.shares[i], Best: i == b}
	}
	ks.setCandidates(candidateNames(saved))
	return out
}

func candidateNames(cands []*impl) []string {
	out := make([]string, len(cands))
	for i, c := range cands {
		out[i] = c.name
	}
	return out
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
