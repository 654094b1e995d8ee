package main

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/commtune/commtune"
	"github.com/commtune/commtune/internal/config"
	"github.com/commtune/commtune/internal/core"
	"github.com/commtune/commtune/internal/job"
	"github.com/commtune/commtune/internal/profile"
	"github.com/commtune/commtune/internal/sched"
	"github.com/commtune/commtune/internal/units"
)

// profileReport is the profile section: this platform's fingerprint, the
// profile a job here would load and what it decides, or why a job runs
// on the defaults.
type profileReport struct {
	Fingerprint profile.Fingerprint `json:"fingerprint"`
	Path        string              `json:"path"`
	// Status is "loaded", "missing", "foreign", "invalid" or "off".
	Status     string      `json:"status"`
	Problem    string      `json:"problem,omitempty"`
	Created    time.Time   `json:"created,omitzero"`
	Quick      bool        `json:"quick,omitempty"`
	Seconds    float64     `json:"seconds,omitempty"`
	Selections []selection `json:"selections,omitempty"`
	Rails      []railCurve `json:"rails,omitempty"`
	splitPays  map[string]int
}

// railCurve is one rail's sampled curve as a split reads it.
type railCurve struct {
	Transport     string  `json:"transport"`
	Rail          string  `json:"rail"`
	BandwidthMBps float64 `json:"bandwidth_MBps"` // asymptotic: the curve's last segment
	LatencyUS     float64 `json:"latency_us"`     // the curve at its first sample
	Samples       int     `json:"samples"`
}

// railCurves lists the per-rail curves of p and, per transport, the size
// from which splitting over them pays (sched.SplitPays, 0: never).
func railCurves(p *profile.Profile) ([]railCurve, map[string]int) {
	var out []railCurve
	pays := map[string]int{}
	for _, name := range slices.Sorted(maps.Keys(p.Transports)) {
		t := p.Transports[name]
		var models []*sched.RailModel
		for _, rail := range slices.Sorted(maps.Keys(t.Rails)) {
			c := t.Rails[rail]
			m, err := sched.NewRailModel(c.Points())
			if err != nil {
				continue
			}
			models = append(models, m)
			out = append(out, railCurve{Transport: name, Rail: rail, BandwidthMBps: m.Bandwidth() * 1e3,
				LatencyUS: m.Predict(1) / 1e3, Samples: len(c)})
		}
		if len(models) > 1 {
			pays[name] = sched.SplitPays(models, 0)
		}
	}
	return out, pays
}

func collectProfile(opts infoOptions) (infoReport, error) {
	fp, path, err := config.Platform()
	if err != nil {
		return nil, err
	}
	if opts.profile != "" {
		path = opts.profile
	}
	r := &profileReport{Fingerprint: fp, Path: path}
	if path == commtune.ProfileOff {
		r.Status = "off"
		return r, nil
	}
	p, err := profile.Load(path, fp)
	switch {
	case err == nil:
		r.Status = "loaded"
	case profile.IsMissing(err):
		r.Status = "missing"
		return r, nil
	case errors.Is(err, profile.ErrForeign):
		r.Status, r.Problem = "foreign", err.Error()
		return r, nil
	default:
		r.Status, r.Problem = "invalid", err.Error()
		return r, nil
	}
	r.Created, r.Quick, r.Seconds = p.Created, p.Quick, p.Seconds
	r.Selections = selections(p)
	r.Rails, r.splitPays = railCurves(p)
	return r, nil
}

func (r *profileReport) writeText(w io.Writer) error {
	var b strings.Builder
	f := r.Fingerprint
	fmt.Fprintf(&b, "Platform %s: %s, %d CPUs, caches %s, kernel %s, %s, transports %s\n",
		f.ID, f.CPU, f.CPUs, f.Caches, f.Kernel, f.Go, strings.Join(f.Transports, ", "))
	switch r.Status {
	case "loaded":
		pass := "full pass"
		if r.Quick {
			pass = "quick pass"
		}
		fmt.Fprintf(&b, "Profile %s: sampled %s (%s ago), %s of %.1f s\n",
			r.Path, r.Created.Local().Format("2006-01-02 15:04"), age(time.Since(r.Created)), pass, r.Seconds)
		b.WriteString("Selection by message size, and why:\n")
		var sel strings.Builder
		if err := writeSelections(&sel, r.Selections); err != nil {
			return err
		}
		b.WriteString(sel.String())
		if len(r.Rails) > 0 {
			b.WriteString("Rails (each sampled alone; a split predicts chunk times from these curves):\n")
			for _, rc := range r.Rails {
				fmt.Fprintf(&b, "  %s %-16s %8.1f MB/s asymptotic, %8.1f µs at the first sample (%d samples)\n",
					rc.Transport, rc.Rail, rc.BandwidthMBps, rc.LatencyUS, rc.Samples)
			}
			for _, t := range slices.Sorted(maps.Keys(r.splitPays)) {
				if n := r.splitPays[t]; n > 0 {
					fmt.Fprintf(&b, "  %s: splitting a message over the rails pays from %s\n", t, units.FormatSize(int64(n)))
				} else {
					fmt.Fprintf(&b, "  %s: splitting never pays on these curves\n", t)
				}
			}
		}
	case "off":
		fmt.Fprintf(&b, "Profile: off (%s=off); jobs run on the defaults\n", commtune.EnvProfile)
		writeDefaults(&b)
	case "missing":
		fmt.Fprintf(&b, "Profile: none at %s; jobs run on the defaults (run `commtune sample` to measure this machine)\n", r.Path)
		writeDefaults(&b)
	default:
		fmt.Fprintf(&b, "Profile: ignored, %s; jobs run on the defaults (run `commtune sample`)\n", r.Problem)
		writeDefaults(&b)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeDefaults prints what a job uses with no profile.
func writeDefaults(b *strings.Builder) {
	eager := boundaryLabel(commtune.DefaultShmEager + 1)
	fmt.Fprintf(b, "Defaults:\n  shm  0..%s eager-iovec | %s.. rendezvous: cma if the two ranks share no cache, else copy (shared, or unknown); cachefree from DMA_min\n",
		eager, eager)
	plan, err := job.PlanFor(nil, "tcp")
	if err != nil {
		fmt.Fprintf(b, "  tcp  %v\n", err)
		return
	}
	fmt.Fprintf(b, "  tcp  %s\n", formatRanges(plan.Policy.Ranges("tcp", core.Contiguous)))
}

// age says how long ago, roughly.
func age(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%d s", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%d min", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%.1f h", d.Hours())
	}
	return fmt.Sprintf("%d days", int(d.Hours()/24))
}
