package main

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/commtune/commtune"
	"github.com/commtune/commtune/internal/coll"
	"github.com/commtune/commtune/internal/config"
	"github.com/commtune/commtune/internal/job"
	"github.com/commtune/commtune/internal/profile"
	"github.com/commtune/commtune/internal/setting"
	"github.com/commtune/commtune/internal/units"
)

// collInfo is the coll section of `commtune info`: the fixed decision
// table, the algorithms COMMTUNE_COLL_<OP> forces in this environment, and
// every registered algorithm with the attributes selectors reason on.
type collInfo struct {
	Rules      []collRule        `json:"rules"`
	Forced     map[string]string `json:"forced,omitempty"`
	Algorithms []collAlgorithm   `json:"algorithms"`
	Lottery    *lotteryInfo      `json:"lottery,omitempty"`
	// Pull is from which size the table's collectives are pulled (single
	// copy) for a job with a rank per processor, and for one with twice
	// as many ranks.
	Pull []collPull `json:"pull"`
	// Table says which decision table is in force over shared memory:
	// the profile's sampled one or the fixed one, and why; Sampled lists
	// the sampled table's points.
	Table   string        `json:"table"`
	Sampled []sampledRule `json:"sampled,omitempty"`
}

// sampledRule is one point of the profile's sampled table: the choice and
// the runner-up, with their mean calls.
type sampledRule struct {
	Op        string  `json:"op"`
	Ranks     int     `json:"ranks"`
	Bytes     int     `json:"bytes"`
	Algorithm string  `json:"algorithm"`
	MeanUS    float64 `json:"mean_us"`
	RunnerUp  string  `json:"runner_up,omitempty"`
	RunnerUS  float64 `json:"runner_up_us,omitempty"`
}

// collPull is the single-copy threshold of collectives for one kind of job.
type collPull struct {
	Ranks int    `json:"ranks"`
	CPUs  int    `json:"cpus"`
	From  int    `json:"from"`         // 0: never
	To    int    `json:"to,omitempty"` // 0: no bound
	Why   string `json:"why"`
}

// lotteryInfo is what the lottery learned on this machine, as saved
// between jobs: per key, each candidate's standing.
type lotteryInfo struct {
	Select string       `json:"select"` // COMMTUNE_COLL_SELECT in this environment
	Path   string       `json:"path"`   // the state file; empty: persistence off
	Error  string       `json:"error,omitempty"`
	Keys   []lotteryKey `json:"keys,omitempty"`
}

type lotteryKey struct {
	Key        string            `json:"key"`
	Candidates []lotteryStanding `json:"candidates"`
}

type lotteryStanding struct {
	Algorithm string  `json:"algorithm"`
	AvgUS     float64 `json:"avg_us"`
	SigmaUS   float64 `json:"sigma_us"`
	Calls     int64   `json:"calls"`
	Tickets   float64 `json:"tickets"` // share of the tickets in a draw now
	Best      bool    `json:"best,omitempty"`
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
	Pulled      bool   `json:"pulled_only,omitempty"` // looked at first, for calls that pull their messages
	Algorithm   string `json:"algorithm"`
}

func collectColl(infoOptions) (infoReport, error) {
	var r collInfo
	for _, op := range coll.Operations {
		pulled := len(coll.PulledRules(op))
		for i, rule := range append(coll.PulledRules(op), coll.Rules(op)...) {
			cr := collRule{Op: string(op), Commutative: rule.Commutative, Pulled: i < pulled, Algorithm: rule.Algorithm.Name()}
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
				return nil, setting.Bad(setting.Env(name, v), "an algorithm of %s (%w)", op, err)
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
	r.Lottery = collectLottery()
	pull, err := collectPull()
	if err != nil {
		return nil, err
	}
	r.Pull = pull
	cfg, err := config.Build(os.LookupEnv, nil)
	if err != nil {
		return nil, err
	}
	table, why := job.CollTableFor(cfg, infoProfile())
	r.Table = why
	for _, n := range table.Ranks() {
		for _, op := range coll.Operations {
			for _, p := range table.Points(op, n) {
				sr := sampledRule{Op: string(op), Ranks: n, Bytes: p.Bytes, Algorithm: p.Ranked[0].Name(), MeanUS: p.MeanUS[0]}
				if len(p.Ranked) > 1 {
					sr.RunnerUp, sr.RunnerUS = p.Ranked[1].Name(), p.MeanUS[1]
				}
				r.Sampled = append(r.Sampled, sr)
			}
		}
	}
	return &r, nil
}

// infoProfile is this platform's profile as Init would load it, or nil
// (missing or unusable: the defaults, as Init runs).
func infoProfile() *profile.Profile {
	fp, path, err := config.Platform()
	if err != nil || os.Getenv(commtune.EnvProfile) == commtune.ProfileOff {
		return nil
	}
	if v := os.Getenv(commtune.EnvProfile); v != "" {
		path = v
	}
	prof, _ := profile.Load(path, fp)
	return prof
}

// collectPull finds the collectives' single-copy threshold as Init would
// for a job with a rank per processor and for one with twice as many,
// from this environment and this platform's profile.
func collectPull() ([]collPull, error) {
	prof := infoProfile()
	cpus := runtime.NumCPU()
	var out []collPull
	for _, ranks := range []int{max(cpus, 2), 2 * cpus} {
		cfg, err := config.Build(os.LookupEnv, nil)
		if err != nil {
			return nil, err
		}
		cfg.DefaultSpin(ranks, cpus)
		r, why := job.CollPullFor(cfg, prof, ranks, cpus)
		out = append(out, collPull{Ranks: ranks, CPUs: cpus, From: int(r.From), To: int(r.To), Why: why})
	}
	return out, nil
}

// collectLottery reads the lottery's saved learning. A file it cannot use
// is reported in the section, not as a failure of info: the rest of the
// report stands.
func collectLottery() *lotteryInfo {
	info := &lotteryInfo{Select: commtune.CollSelectLearn}
	if v := strings.TrimSpace(os.Getenv(commtune.EnvCollSelect)); v != "" {
		info.Select = v
	}
	l, path, err := config.LotteryState()
	info.Path = path
	if err != nil {
		info.Error = err.Error()
		return info
	}
	if l == nil {
		return info
	}
	for _, k := range l.Keys() {
		lk := lotteryKey{Key: k.String()}
		for _, st := range l.Explain(k) {
			lk.Candidates = append(lk.Candidates, lotteryStanding{Algorithm: st.Impl, AvgUS: us(st.Avg), SigmaUS: us(st.Sigma),
				Calls: st.Calls, Tickets: st.Share, Best: st.Best})
		}
		info.Keys = append(info.Keys, lk)
	}
	return info
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

func (r *collInfo) writeText(w io.Writer) error {
	fmt.Fprintf(w, "collectives: decision table in force over shared memory: %s\n", r.Table)
	if len(r.Sampled) > 0 {
		fmt.Fprintln(w, "the sampled table (per operation and ranks, the sampled size nearest a call's decides; bytes = the vector, or one rank's block):")
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  op\tranks\tbytes\tchoice\tmean us\trunner-up\tmean us\tmargin")
		for _, p := range r.Sampled {
			runner, margin := "-", "-"
			if p.RunnerUp != "" {
				runner = fmt.Sprintf("%s\t%.1f", p.RunnerUp, p.RunnerUS)
				margin = fmt.Sprintf("%+.0f%%", 100*(p.RunnerUS/p.MeanUS-1))
			} else {
				runner += "\t-"
			}
			fmt.Fprintf(tw, "  %s\t%d\t%s\t%s\t%.1f\t%s\t%s\n", p.Op, p.Ranks, units.FormatSize(int64(p.Bytes)), p.Algorithm, p.MeanUS, runner, margin)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	fmt.Fprintln(w, "before any table: goroutine ranks of one process run the direct algorithms; processes of one node, the node segment for what its slots carry;")
	fmt.Fprintln(w, "ranks on several nodes (some node holding two or more), the hierarchical barrier, bcast, reduce and allreduce (commutative) for what a node segment's slot holds")
	fmt.Fprintln(w, "the fixed decision table (first matching line wins; bytes = the vector, or one rank's block):")
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
	fmt.Fprintf(w, "single copy: the table's collectives over shared memory have their messages read in place (/pull) from\n")
	for _, p := range r.Pull {
		from := "never"
		if p.From > 0 {
			from = units.FormatSize(int64(p.From)) + " bytes"
		}
		if p.To > 0 {
			from += " up to " + units.FormatSize(int64(p.To))
		}
		fmt.Fprintf(w, "  %d ranks on %d processors: %s (%s)\n", p.Ranks, p.CPUs, from, p.Why)
	}
	return r.Lottery.writeText(w)
}

func (l *lotteryInfo) writeText(w io.Writer) error {
	if l == nil {
		return nil
	}
	fmt.Fprintf(w, "\nthe lottery (%s=%s", commtune.EnvCollSelect, l.Select)
	if l.Select == commtune.CollSelectTable || l.Select == commtune.CollSelectFixed {
		fmt.Fprint(w, ", under which it neither draws nor learns")
	}
	fmt.Fprint(w, "):")
	switch {
	case l.Path == "":
		fmt.Fprintf(w, " its learning is not kept (%s=%s)\n", commtune.EnvTuneState, commtune.TuneStateOff)
		return nil
	case l.Error != "":
		fmt.Fprintf(w, " %s\n", l.Error)
		return nil
	case len(l.Keys) == 0:
		fmt.Fprintf(w, " nothing learned yet in %s\n", l.Path)
		return nil
	}
	fmt.Fprintf(w, " learned in %s; per key, its candidates, fastest first (* runs first in the next job)\n", l.Path)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, k := range l.Keys {
		fmt.Fprintf(tw, "%s\tavg us\tsigma us\tcalls\ttickets\n", k.Key)
		for _, c := range k.Candidates {
			mark := " "
			if c.Best {
				mark = "*"
			}
			fmt.Fprintf(tw, "  %s %s\t%.1f\t%.1f\t%d\t%.0f%%\n", mark, c.Algorithm, c.AvgUS, c.SigmaUS, c.Calls, 100*c.Tickets)
		}
	}
	return tw.Flush()
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
		out[i] = fmt.Sprintf("%-*s %3d  %s", coll.OpNameWidth(), op, count[op], strings.Join(families[op], ", "))
	}
	return out
}
