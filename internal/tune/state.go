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

// Update returns what a job writes back to a state file: file, what the
// file holds now (other jobs may have written to it since this job loaded
// it), with this job's learning since it loaded base added to it, and only
// that. mine is the job's Snapshot at exit, taken from a Lottery restored
// from base. Update leaves its arguments unchanged.
//
// A Stats is an exponential average, so base's samples cannot be taken
// out of mine exactly. The part of mine learned since the load is, for
// each key and implementation, with m mine's entry and b base's:
//
//   - nothing, if m equals b (no call recorded since the load);
//   - all of m, if b is absent or m.Calls <= b.Calls while m differs from
//     b: calls only decrease when a re-exploration (LotteryConfig.
//     DriftCalls) discarded the old measurements, so every sample behind m
//     is the job's own;
//   - otherwise m.Calls-b.Calls calls with m's average and variance, the
//     most recent figures: the job's samples weigh by their number, and
//     their summary leans towards b's history only as much as the
//     exponential average still remembers it. (A re-exploration followed
//     by more than b.Calls calls is counted as m.Calls-b.Calls calls too:
//     the job's figure then weighs less than it could, never twice.)
//
// That part is pooled into file as Merge pools, so two jobs that loaded
// the same base and write back in either order leave the same file, up to
// rounding: pooling by calls is associative and commutative.
func Update(file, base, mine State) State {
	return Merge(file, since(base, mine))
}

// since returns the part of mine learned since base was restored (see
// Update).
func since(base, mine State) State {
	out := State{Keys: make(map[Key]map[string]Stats)}
	for k, m := range mine.Keys {
		var add map[string]Stats
		for name, s := range m {
			b, ok := base.Keys[k][name]
			switch {
			case s.Calls <= 0 || (ok && s == b):
				continue
			case ok && b.Calls > 0 && s.Calls > b.Calls:
				s.Calls -= b.Calls
			}
			if add == nil {
				add = make(map[string]Stats, len(m))
			}
			add[name] = s
		}
		if add != nil {
			out.Keys[k] = add
		}
	}
	return out
}
