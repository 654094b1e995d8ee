package main

import (
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/commtune/commtune"
	"github.com/commtune/commtune/internal/config"
	"github.com/commtune/commtune/internal/tune"
)

// haloInfo is the halo section: how Halos select their implementation
// here, the implementations with their attributes, and the decisions
// saved by earlier jobs with what was measured and why.
type haloInfo struct {
	Select          string            `json:"select"`
	Implementations []haloImplInfo    `json:"implementations"`
	Path            string            `json:"path,omitempty"`
	Error           string            `json:"error,omitempty"`
	Decisions       []haloDecisionKey `json:"decisions"`
}

type haloImplInfo struct {
	Name  string            `json:"name"`
	Attrs map[string]string `json:"attrs"`
}

type haloDecisionKey struct {
	Key string `json:"key"`
	tune.Decision
}

func collectHalo(infoOptions) (infoReport, error) {
	r := &haloInfo{Select: commtune.HaloSelectLearn}
	if v := strings.TrimSpace(os.Getenv(commtune.EnvHaloSelect)); v != "" {
		r.Select = v
	}
	for _, e := range commtune.HaloImplAttrs() {
		r.Implementations = append(r.Implementations, haloImplInfo{Name: e.Name, Attrs: e.Attrs})
	}
	m, path, err := config.HaloDecisions()
	r.Path = path
	if err != nil {
		r.Error = err.Error() // reported in the section: the rest stands
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		r.Decisions = append(r.Decisions, haloDecisionKey{Key: k, Decision: m[k]})
	}
	return r, nil
}

func (r *haloInfo) writeText(w io.Writer) error {
	fmt.Fprintf(w, "halo exchanges: selected by %s (%s)\n", r.Select, commtune.EnvHaloSelect)
	fmt.Fprintln(w, "implementations (primitive_partners_data):")
	for _, im := range r.Implementations {
		var attrs []string
		for k, v := range im.Attrs {
			attrs = append(attrs, k+"="+v)
		}
		slices.Sort(attrs)
		fmt.Fprintf(w, "  %-22s %s\n", im.Name, strings.Join(attrs, " "))
	}
	switch {
	case r.Error != "":
		fmt.Fprintf(w, "saved decisions: %s\n", r.Error)
	case r.Path == "":
		fmt.Fprintf(w, "saved decisions: none kept (%s=off)\n", commtune.EnvHaloState)
	case len(r.Decisions) == 0:
		fmt.Fprintf(w, "saved decisions: none yet in %s\n", r.Path)
	default:
		fmt.Fprintf(w, "saved decisions in %s (a rerun with the same key starts on the winner without exploring):\n", r.Path)
	}
	for _, d := range r.Decisions {
		fmt.Fprintf(w, "  %s\n    winner %s at %.3g s, by %s after %d calls (selection %d of its job), %s\n",
			d.Key, d.Winner, d.Seconds, d.Method, d.Calls, d.Selections, d.At.Format("2006-01-02 15:04:05 UTC"))
		names := make([]string, 0, len(d.Means))
		for n := range d.Means {
			names = append(names, n)
		}
		sort.Slice(names, func(i, j int) bool { return d.Means[names[i]] < d.Means[names[j]] })
		for _, n := range names {
			fmt.Fprintf(w, "      %-22s %.3g s (max over ranks of the filtered mean)\n", n, d.Means[n])
		}
		if len(d.Explain) > 0 {
			fmt.Fprintln(w, "    why:")
			for _, line := range d.Explain {
				fmt.Fprintf(w, "      %s\n", line)
			}
		}
	}
	return nil
}
