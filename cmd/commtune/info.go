package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/commtune/commtune/internal/topo"
	"github.com/commtune/commtune/internal/units"
)

func init() {
	register(command{name: "info", summary: "describe this machine (caches, cores, NUMA, DMA_min) and what its tuning profile selects", run: infoMain})
}

// infoSection is one part of `commtune info`'s report. Each section gets a
// flag of its name that selects it, and a key of its name in the --json
// object; `commtune info` without section flags prints every section.
// Adding one is adding an entry to infoSections.
type infoSection struct {
	name    string
	usage   string
	collect func(infoOptions) (infoReport, error)
}

// infoReport is what a section collected: encoded as is for --json,
// printed by writeText otherwise.
type infoReport interface {
	writeText(w io.Writer) error
}

// infoOptions are the flags that apply to every section.
type infoOptions struct {
	sysfs   string // root of a copy of a sysfs tree; "" for this machine's /sys
	profile string // a profile file; "" for the one a job here would load
}

var infoSections = []infoSection{
	{"topology", "CPUs, caches and who shares them, cores, NUMA nodes, the CPUs this process may run on, and DMA_min", collectTopology},
	{"profile", "the platform fingerprint, the tuning profile a job here loads, and the method it selects for each message size, with the reasons", collectProfile},
	{"coll", "the fixed decision table of collective algorithms, and those COMMTUNE_COLL_<OP> forces", collectColl},
	{"halo", "the halo exchange implementations, how they are selected, and the decisions saved by earlier jobs: what was measured and why", collectHalo},
	{"shm", "the shared memory a rank holds for messages to it, by ranks on the node, with this environment's ring size", collectShm},
	{"launcher", "the launcher that started this process and the protocol a job speaks to it (commtune run, PMI-1/2, PMIx), from the environment", collectLauncher},
}

// infoMain is `commtune info [--topology] [--json] [--sysfs DIR]`.
func infoMain(args []string) int {
	fs := newFlagSet("info", "[--topology] [--profile] [--coll] [--halo] [--shm] [--launcher] [--json] [--sysfs DIR] [--file PROFILE]")
	selected := make([]*bool, len(infoSections))
	for i, s := range infoSections {
		selected[i] = fs.Bool(s.name, false, "print the "+s.name+" section: "+s.usage)
	}
	asJSON := fs.Bool("json", false, "print one JSON object with a key per section")
	var opts infoOptions
	fs.StringVar(&opts.sysfs, "sysfs", "", "read the topology from a copy of a machine's sysfs tree rooted at `DIR` instead of /sys;\n"+
		"allowed CPUs are then all of the tree's CPUs")
	fs.StringVar(&opts.profile, "file", "", "report on the profile in `PROFILE` instead of the one a job here would load")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() > 0 {
		return usageError("info", "unexpected argument %q", fs.Arg(0))
	}
	all := true
	for _, sel := range selected {
		all = all && !*sel
	}
	names := []string{}
	reports := map[string]infoReport{}
	for i, s := range infoSections {
		if !all && !*selected[i] {
			continue
		}
		r, err := s.collect(opts)
		if err != nil {
			fmt.Fprintf(os.Stderr, "commtune info: %s: %v\n", s.name, err)
			return 1
		}
		names = append(names, s.name)
		reports[s.name] = r
	}
	if err := writeInfo(os.Stdout, names, reports, *asJSON); err != nil {
		fmt.Fprintf(os.Stderr, "commtune info: %v\n", err)
		return 1
	}
	return 0
}

// writeInfo prints the reports of the named sections, in order, blank lines
// between them; or all of them as one JSON object keyed by section name.
func writeInfo(w io.Writer, names []string, reports map[string]infoReport, asJSON bool) error {
	if asJSON {
		return json.NewEncoder(w).Encode(reports) // one line, as bench --json
	}
	for i, name := range names {
		if i > 0 {
			if _, err := fmt.Fprintln(w); err != nil {
				return err
			}
		}
		if err := reports[name].writeText(w); err != nil {
			return err
		}
	}
	return nil
}

// dmaMinRule and dmaMinAssumption say, in the output itself, what the
// DMA_min figures mean.
const (
	dmaMinRule       = "DMA_min (seed 004 §3.3) = cache size / (2 × cores sharing the cache); two ranks that share no cache each use their own alone: its size / 2"
	dmaMinAssumption = "one rank pinned on each allowed CPU; every pair of those ranks"
)

// topologyReport is the topology section: the machine (topo.Topology's
// fields, inlined in JSON), the CPUs this process may use, and DMA_min
// for the pairs of ranks placed one per allowed CPU.
type topologyReport struct {
	Source string `json:"source"` // the sysfs root read
	*topo.Topology
	Allowed     []int  `json:"allowed"`
	AllowedFrom string `json:"allowed_from"` // how Allowed was found
	DMAMin      struct {
		Rule       string             `json:"rule"`
		Assumption string             `json:"assumption"`
		Groups     []topo.DMAMinGroup `json:"groups"`
	} `json:"dma_min"`
}

func collectTopology(opts infoOptions) (infoReport, error) {
	r := &topologyReport{Source: opts.sysfs}
	var err error
	if opts.sysfs == "" {
		r.Source = "/sys"
		if root := os.Getenv(topo.EnvSysfs); root != "" {
			r.Source = fmt.Sprintf("%s=%s", topo.EnvSysfs, root)
		}
		r.Topology, err = topo.Read()
	} else {
		r.Topology, err = topo.ReadFrom(opts.sysfs)
	}
	if err != nil {
		return nil, err
	}
	switch {
	case opts.sysfs != "":
		// This process's affinity says nothing about another machine.
		r.Allowed, r.AllowedFrom = r.CPUs, "--sysfs: all CPUs of the tree"
	default:
		r.Allowed, err = topo.Allowed()
		r.AllowedFrom = "sched_getaffinity"
		if err != nil {
			r.Allowed, r.AllowedFrom = r.CPUs, fmt.Sprintf("all online CPUs, since %v", err)
		}
	}
	r.DMAMin.Rule = dmaMinRule
	r.DMAMin.Assumption = dmaMinAssumption
	r.DMAMin.Groups = r.DMAMinPairs(r.Allowed)
	return r, nil
}

func (r *topologyReport) writeText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "Topology (%s):\n", r.Source)
	b.WriteString(r.Topology.String())
	fmt.Fprintf(&b, "\nAllowed CPUs: %s, from %s\n", topo.FormatCPUList(r.Allowed), r.AllowedFrom)
	fmt.Fprintf(&b, "\n%s.\nAssuming %s:\n", r.DMAMin.Rule, r.DMAMin.Assumption)
	for _, g := range r.DMAMin.Groups {
		fmt.Fprintf(&b, "  %-7s %s\n", dmaMinValue(g), dmaMinReason(g))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func dmaMinValue(g topo.DMAMinGroup) string {
	if g.Bytes == 0 {
		return "unknown"
	}
	return units.FormatSize(g.Bytes)
}

// dmaMinReason says which cache a group's value comes from, how many pairs
// share it and one of them.
func dmaMinReason(g topo.DMAMinGroup) string {
	x, y := g.CPUs[0], g.CPUs[1]
	pairs := fmt.Sprintf("(%d pairs, e.g. CPUs %d and %d)", g.Pairs, x, y)
	if g.Pairs == 1 {
		pairs = fmt.Sprintf("(1 pair: CPUs %d and %d)", x, y)
	}
	var why string
	switch {
	case g.Cache == nil:
		why = "no cache size known for these CPUs " + pairs
	case x == y:
		why = fmt.Sprintf("both ranks on CPU %d (the only one allowed), under %s %s", x, g.Cache.Name(), units.FormatSize(g.Cache.Size))
	case g.Shared:
		why = fmt.Sprintf("sharing %s %s among %d CPUs %s", g.Cache.Name(), units.FormatSize(g.Cache.Size), g.Users, pairs)
	case g.LeftOut != nil:
		why = fmt.Sprintf("each alone in its own %s %s %s", g.Cache.Name(), units.FormatSize(g.Cache.Size), pairs)
	default:
		why = fmt.Sprintf("sharing no cache, each alone in its own %s %s %s", g.Cache.Name(), units.FormatSize(g.Cache.Size), pairs)
	}
	if g.LeftOut != nil {
		why += fmt.Sprintf("; %s %s left out: a total, not one instance, so whether they share it is unknown", g.LeftOut.Name(), units.FormatSize(g.LeftOut.Size))
	}
	return why
}
