package tune

import (
	"fmt"
	"maps"
)

// State is what a Lottery has learned, in a form to save between jobs
// (seed 001 §6.1.3: read at start, written back at exit). Marshalled as
// JSON, keys appear in their text form (Key.String):
//
//	{"keys": {"allreduce/ranks=8/size=2^16/commutative/shm":
//	           {"ring": {"avg_s": 0.0012, "var_s2": 1e-9, "calls": 40}}}}
type State struct {
	// Keys maps each decision to its implementations' measurements.
	Keys map[Key]map[string]Stats `json:"keys"`
}

// Snapshot returns a copy of what l has learned: every implementation with
// at least one sample, for every key. Whether a measurement is stale (see
// LotteryConfig.DriftCalls) is not kept.
func (l *Lottery) Snapshot() State {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := State{Keys: make(map[Key]map[string]Stats, len(l.keys))}
	for k, ks := range l.keys {
		m := make(map[string]Stats, len(ks.impls))
		for name, c := range ks.impls {
			if c.Calls > 0 {
				m[name] = c.Stats
			}
		}
		if len(m) > 0 {
			s.Keys[k] = m
		}
	}
	return s
}

// Restore replaces everything l has learned with s (entries with no calls
// are skipped). The first Choose of each key then returns its best-known
// candidate. It returns an error, and changes nothing, if s holds a
// negative or non-finite average or variance or a negative call count.
func (l *Lottery) Restore(s State) error {
	for k, m := range s.Keys {
		for name, st := range m {
			if err := st.check(); err != nil {
				return fmt.Errorf("tune: restore %s %q: %w", k, name, err)
			}
		}
	}
	keys := make(map[Key]*keyState, len(s.Keys))
	for k, m := range s.Keys {
		ks := &keyState{impls: make(map[string]*impl, len(m))}
		for name, st := range m {
			if st.Calls > 0 {
				ks.impls[name] = &impl{name: name, Stats: st}
			}
		}
		keys[k] = ks
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.keys = keys
	return nil
}

// Merge combines what two jobs learned, losing neither: keys and
// implementations known to one side are kept as they are, and an
// implementation known to both is pooled by calls-weighted average, with
// the pooled variance (each side's variance plus the spread of its average
// around the pooled one) and the sum of the calls. Merge is symmetric and
// leaves a and b unchanged.
func Merge(a, b State) State {
	out := State{Keys: make(map[Key]map[string]Stats, len(a.Keys)+len(b.Keys))}
	for k, m := range a.Keys {
		out.Keys[k] = maps.Clone(m)
	}
	for k, m := range b.Keys {
		o := out.Keys[k]
		if o == nil {
			out.Keys[k] = maps.Clone(m)
			continue
		}
		for name, st := range m {
			if prev, ok := o[name]; ok {
				o[name] = combine(prev, st)
			} else {
				o[name] = st
			}
		}
	}
	return out
}
