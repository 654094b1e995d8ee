package profile

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"runtime"
	"slices"
	"strings"

	"github.com/commtune/commtune/internal/topo"
	"github.com/commtune/commtune/internal/units"
)

// Fingerprint identifies a platform by what seed 000 §II-A says moves
// transfer times: the CPU and its caches, the kernel (its copy and
// network paths), the Go version (the runtime's memmove), and the
// transports present. A profile applies only where its fingerprint
// matches.
type Fingerprint struct {
	ID         string   `json:"id"` // Sum of the other fields
	CPU        string   `json:"cpu"`
	CPUs       int      `json:"cpus"`
	Caches     string   `json:"caches"`
	Kernel     string   `json:"kernel"`
	Go         string   `json:"go"`
	Transports []string `json:"transports"`
}

// Machine returns this machine's fingerprint. transports describes the
// transports present and how they are set up (e.g. "shm", "tcp rails=1").
func Machine(transports []string) Fingerprint {
	f := Fingerprint{CPU: cpuModel(), Kernel: kernelRelease(), Go: runtime.Version(), Transports: slices.Clone(transports)}
	if t, err := topo.Read(); err == nil {
		f.CPUs = len(t.CPUs)
		f.Caches = cacheSummary(t)
	} else {
		f.CPUs = runtime.NumCPU()
		f.Caches = "unknown"
	}
	f.ID = f.Sum()
	return f
}

// cacheSummary lists each cache level's size and instance count, and where
// they were read, e.g. "L1d 32K×2 L1i 32K×2 L2 1M×2 L3 32M×1 (sysfs)".
func cacheSummary(t *topo.Topology) string {
	var parts []string
	count := map[string]int{}
	caches := t.Caches
	for i := range caches {
		key := caches[i].Name() + " " + units.FormatSize(caches[i].Size)
		if count[key] == 0 {
			parts = append(parts, key)
		}
		count[key]++
	}
	for i, p := range parts {
		parts[i] = fmt.Sprintf("%s×%d", p, count[p])
	}
	if len(parts) == 0 {
		return "none listed"
	}
	return strings.Join(parts, " ") + " (" + t.CacheSource + ")"
}

// Sum returns a short hash of the identifying fields: the profile's file
// name.
func (f Fingerprint) Sum() string {
	h := sha256.New()
	fmt.Fprintf(h, "cpu=%q\ncpus=%d\ncaches=%q\nkernel=%q\ngo=%q\ntransports=%q\n",
		f.CPU, f.CPUs, f.Caches, f.Kernel, f.Go, f.Transports)
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// Diff lists the fields in which f and g differ, as "field: f → g".
func (f Fingerprint) Diff(g Fingerprint) []string {
	var out []string
	add := func(name, a, b string) {
		if a != b {
			out = append(out, fmt.Sprintf("%s %s → %s", name, a, b))
		}
	}
	add("cpu", f.CPU, g.CPU)
	add("cpus", fmt.Sprint(f.CPUs), fmt.Sprint(g.CPUs))
	add("caches", f.Caches, g.Caches)
	add("kernel", f.Kernel, g.Kernel)
	add("go", f.Go, g.Go)
	add("transports", strings.Join(f.Transports, ","), strings.Join(g.Transports, ","))
	return out
}
