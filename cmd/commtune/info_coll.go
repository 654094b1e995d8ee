package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/commtune/commtune"
	"github.com/commtune/commtune/internal/coll"
)

// collInfo is the coll section of `commtune info`: the fixed decision
// table, and the algorithms COMMTUNE_COLL_<OP> forces in this environment.
type collInfo struct {
	Rules  []collRule        `json:"rules"`
	Forced map[string]string `json:"forced,omitempty"`
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
	return nil
}
