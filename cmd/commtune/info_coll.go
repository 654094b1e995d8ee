package main

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/commtune/commtune"
	"github.com/commtune/commtune/internal/coll"
)

// collInfo is the coll section of `commtune info`: the fixed decision
// table, the algorithms COMMTUNE_COLL_<OP> forces in this environment, and
// every registered algorithm with the attributes selectors reason on.
type collInfo struct {
	Rules      []collRule        `json:"rules"`
	Forced     map[string]string `json:"forced,omitempty"`
	Algorithms []collAlgorithm   `json:"algorithms"`
}

// collAlgorithm is one entry of coll.Registry: the stable name and its
// attributes (op, family, shape, k, seg, commutative; those that do not
// apply are absent).
type collAlgorithm struct {
	Name  string            `json:"name"`
	Attrs map[string]string `json:"attrs"`
}

type collRule struct {
	Op          string `json:"op"`
	MaxRanks    int    `json:"max_ranks,omitempty"` // absent: any
	MaxBytes    int    `json:"max_bytes,omitempty"` // absent: any
	Commutative bool   `json:"commutative_only,omitempty"`
	Algorithm   string `json:"algorithm"`
}

func collectColl(infoOptions) (infoReport, error) {
	var r collInfo
	for _, op := range coll.Operations {
		for _, rule := range coll.Rules(op) {
			cr := collRule{Op: string(op), Commutative: rule.Commutative, Algorithm: rule.Algorithm.Name()}
			if rule.MaxRanks != coll.Unlimited {
				cr.MaxRanks = rule.MaxRanks
			}
			if rule.MaxBytes != coll.Unlimited {
				cr.MaxBytes = rule.MaxBytes
			}
			r.Rules = append(r.Rules, cr)
		}
		name := commtune.EnvCollPrefix + strings.ToUpper(string(op))
		if v := strings.TrimSpace(os.Getenv(name)); v != "" {
			a, err := coll.Parse(op, v)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			if r.Forced == nil {
				r.Forced = map[string]string{}
			}
			r.Forced[string(op)] = a.Name()
		}
	}
	for _, e := range coll.Registry().Entries() {
		r.Algorithms = append(r.Algorithms, collAlgorithm{Name: e.Name, Attrs: e.AttrMap()})
	}
	return &r, nil
}

func (r *collInfo) writeText(w io.Writer) error {
	fmt.Fprintln(w, "collectives: the fixed decision table (first matching line wins; bytes = the vector, or one rank's block)")
	fmt.Fprint(w, coll.DecisionTable())
	for _, op := range coll.Operations {
		if a, ok := r.Forced[string(op)]; ok {
			fmt.Fprintf(w, "forced by %s%s: %s\n", commtune.EnvCollPrefix, strings.ToUpper(string(op)), a)
		}
	}
	fmt.Fprintf(w, "registered algorithms per operation, and their families (--json lists each with its attributes):\n")
	for _, line := range registrySummary(r.Algorithms) {
		fmt.Fprintln(w, line)
	}
	return nil
}

// registrySummary gives one line per operation: how many algorithms it
// has, of which families.
func registrySummary(algs []collAlgorithm) []string {
	var ops []string
	count := map[string]int{}
	families := map[string][]string{}
	for _, a := range algs {
		op, fam := a.Attrs[coll.AttrOp], a.Attrs[coll.AttrFamily]
		if count[op] == 0 {
			ops = append(ops, op)
		}
		count[op]++
		if !slices.Contains(families[op], fam) {
			families[op] = append(families[op], fam)
		}
	}
	out := make([]string, len(ops))
	for i, op := range ops {
		out[i] = fmt.Sprintf("%-10s %3d  %s", op, count[op], strings.Join(families[op], ", "))
	}
	return out
}
