package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/commtune/commtune"
	"github.com/commtune/commtune/internal/stats"
)

// EnvStartupStart hands the ranks of a `commtune bench startup` job
// (commtune's, and the MPI reference's in internal/mpiref/csrc) the
// moment the launcher was started, in Unix nanoseconds. Ranks on one node
// read the same wall clock, so the latest rank's Allreduce completion
// minus it is the time to the first collective, launcher included.
const EnvStartupStart = "COMMTUNE_BENCH_START_NS"

// ParseStartupStart parses EnvStartupStart's value.
func ParseStartupStart(s string) (time.Time, error) {
	ns, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil || ns <= 0 {
		return time.Time{}, fmt.Errorf("%s=%q: want the launch's start in Unix nanoseconds (set by commtune bench startup)", EnvStartupStart, s)
	}
	return time.Unix(0, ns), nil
}

// StartupRank is the one line rank 0 of a startup job prints, commtune's
// and the MPI reference's alike.
type StartupRank struct {
	Ranks int `json:"ranks"`
	// FirstCollectiveNS is from the launch's start (EnvStartupStart) to
	// the moment the last rank had its first Allreduce done.
	FirstCollectiveNS int64 `json:"first_collective_ns"`
}

// Times returns r's time to the first collective with wall, the launch's
// wall time, checking that r comes from a job of n ranks.
func (r StartupRank) Times(n int, wall time.Duration) (StartupTimes, error) {
	if r.Ranks != n {
		return StartupTimes{}, fmt.Errorf("rank 0 reported a job of %d ranks, want %d", r.Ranks, n)
	}
	return StartupTimes{Wall: wall, FirstCollective: time.Duration(r.FirstCollectiveNS)}, nil
}

// Startup is the work of one rank of `commtune bench startup`: the least
// a job does, one Allreduce (Sum) of the rank numbers, checked against
// N(N−1)/2, then a second one (Max) of the moments each rank had the
// first done, so that rank 0 learns the latest. Rank 0 returns its line,
// the others nil.
func Startup(ctx context.Context, c *commtune.Comm, start time.Time) (*StartupRank, error) {
	n := c.Size()
	sum := []int64{0}
	if err := commtune.Allreduce(ctx, c, []int64{int64(c.Rank())}, sum, commtune.Sum); err != nil {
		return nil, err
	}
	done := time.Now().UnixNano()
	if want := int64(n) * int64(n-1) / 2; sum[0] != want {
		return nil, fmt.Errorf("allreduce of the rank numbers of %d ranks gave %d, want %d", n, sum[0], want)
	}
	latest := []int64{0}
	if err := commtune.Allreduce(ctx, c, []int64{done}, latest, commtune.Max); err != nil {
		return nil, err
	}
	if c.Rank() != 0 {
		return nil, nil
	}
	return &StartupRank{Ranks: n, FirstCollectiveNS: latest[0] - start.UnixNano()}, nil
}

// MemInfoPath is where Linux reports the system's memory.
const MemInfoPath = "/proc/meminfo"

// MemInfo is the part of /proc/meminfo that memory in use is computed
// from, in bytes.
type MemInfo struct {
	Total, Free, Buffers, Cached, SReclaimable, Shmem int64
}

// InUse returns memory in use as `free` shows used plus shared: Total −
// Free − Buffers − Cached − SReclaimable + Shmem. The kernel counts
// shared memory (tmpfs, hence /dev/shm and the rings of both commtune and
// MPI) in Cached, so free's used leaves it out; a job's rings are part of
// what starting it costs, so they are added back.
func (m MemInfo) InUse() int64 {
	return m.Total - m.Free - m.Buffers - m.Cached - m.SReclaimable + m.Shmem
}

// maxMemInfoKB bounds a meminfo value (1 EiB): six of them, in bytes,
// add up without overflowing an int64.
const maxMemInfoKB = 1 << 50

// ParseMemInfo parses the text of /proc/meminfo. Each field of MemInfo
// must appear once, as "Name: value kB"; other lines are not read, since
// kernels add and drop them.
func ParseMemInfo(text []byte) (MemInfo, error) {
	var m MemInfo
	fields := map[string]*int64{"MemTotal": &m.Total, "MemFree": &m.Free, "Buffers": &m.Buffers,
		"Cached": &m.Cached, "SReclaimable": &m.SReclaimable, "Shmem": &m.Shmem}
	seen := map[string]bool{}
	for i, line := range strings.Split(string(text), "\n") {
		name, rest, _ := strings.Cut(line, ":")
		p, ok := fields[name]
		if !ok {
			continue
		}
		if seen[name] {
			return MemInfo{}, fmt.Errorf("meminfo line %d: a second %s line", i+1, name)
		}
		seen[name] = true
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return MemInfo{}, fmt.Errorf("meminfo line %d %q: want %q", i+1, line, name+": VALUE kB")
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil || kb < 0 || kb > maxMemInfoKB {
			return MemInfo{}, fmt.Errorf("meminfo line %d %q: %q is not a size in kB from 0 to %d", i+1, line, f[0], int64(maxMemInfoKB))
		}
		*p = kb << 10
	}
	for _, name := range []string{"MemTotal", "MemFree", "Buffers", "Cached", "SReclaimable", "Shmem"} {
		if !seen[name] {
			return MemInfo{}, fmt.Errorf("meminfo: no %s line", name)
		}
	}
	return m, nil
}

// ReadMemInfo reads and parses the meminfo file at path.
func ReadMemInfo(path string) (MemInfo, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return MemInfo{}, err
	}
	m, err := ParseMemInfo(b)
	if err != nil {
		return MemInfo{}, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}

// SystemMemInfo reads this machine's MemInfoPath.
func SystemMemInfo() (MemInfo, error) { return ReadMemInfo(MemInfoPath) }

// DefaultMemEvery is how often a MemWatch samples when not told: often
// enough to catch a peak that lasts a few scheduler ticks, while reading
// /proc/meminfo (tens of microseconds) that often costs well under 1 % of
// a processor the job being measured needs.
const DefaultMemEvery = 5 * time.Millisecond

// MemPeak is how far memory rose above its idle sample while a MemWatch
// ran, in bytes: the peak of InUse and the peak of Shmem, each over every
// sample (not necessarily the same one), minus the idle sample's. The
// idle sample counts, so neither is negative. It is the whole system's
// memory: whatever else runs on the machine meanwhile is in it too.
type MemPeak struct {
	InUse, Shmem int64
	Samples      int // taken after the idle one
}

// MemWatch samples memory from a goroutine between WatchMemory and Stop.
type MemWatch struct {
	read                 func() (MemInfo, error)
	idle                 MemInfo
	peakInUse, peakShmem int64 // over the idle sample and those after it
	samples              int
	err                  error // the first a sample met; sampling stops there
	stop, done           chan struct{}
}

// WatchMemory takes the idle sample with read, then samples every every
// (0: DefaultMemEvery) from a goroutine until Stop.
func WatchMemory(read func() (MemInfo, error), every time.Duration) (*MemWatch, error) {
	if every <= 0 {
		every = DefaultMemEvery
	}
	idle, err := read()
	if err != nil {
		return nil, err
	}
	w := &MemWatch{read: read, idle: idle, peakInUse: idle.InUse(), peakShmem: idle.Shmem,
		stop: make(chan struct{}), done: make(chan struct{})}
	go w.loop(every)
	return w, nil
}

func (w *MemWatch) loop(every time.Duration) {
	defer close(w.done)
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-tick.C:
		}
		m, err := w.read()
		if err != nil {
			w.err = err
			return
		}
		w.samples++
		w.peakInUse = max(w.peakInUse, m.InUse())
		w.peakShmem = max(w.peakShmem, m.Shmem)
	}
}

// Stop ends the sampling and returns the peaks; the error is the one a
// sample met, after which there were no more.
func (w *MemWatch) Stop() (MemPeak, error) {
	close(w.stop)
	<-w.done
	p := MemPeak{InUse: w.peakInUse - w.idle.InUse(), Shmem: w.peakShmem - w.idle.Shmem, Samples: w.samples}
	if w.err != nil {
		return p, fmt.Errorf("sampling memory: %w", w.err)
	}
	return p, nil
}

// StartupTimes is what one launch of a startup job took.
type StartupTimes struct {
	Wall            time.Duration // from starting the launcher to its exit, every rank having exited
	FirstCollective time.Duration // from starting the launcher to the last rank's first Allreduce done
}

// StartupSample is one launch: its times and how much memory it took.
type StartupSample struct {
	StartupTimes
	Mem MemPeak
}

// MeasureStartup takes memory's idle sample with read, runs launch (one
// job, returning its times) while sampling memory every every, and
// returns both.
func MeasureStartup(read func() (MemInfo, error), every time.Duration, launch func() (StartupTimes, error)) (StartupSample, error) {
	w, err := WatchMemory(read, every)
	if err != nil {
		return StartupSample{}, fmt.Errorf("idle memory: %w", err)
	}
	t, err := launch()
	mem, merr := w.Stop()
	if err == nil {
		err = merr
	}
	return StartupSample{t, mem}, err
}

// StartupSide is one side's figures at one job size: the medians over the
// launches that succeeded, and the first failure's error.
type StartupSide struct {
	Launches         int     `json:"launches"` // that succeeded
	WallS            float64 `json:"wall_s"`
	FirstCollectiveS float64 `json:"first_collective_s"`
	PeakMiB          float64 `json:"peak_mib"` // MemPeak.InUse
	ShmMiB           float64 `json:"shm_mib"`  // MemPeak.Shmem
	Error            string  `json:"error,omitempty"`
}

// StartupSideOf summarizes one side's launches at one job size; err is
// the first that failed, if one did.
func StartupSideOf(samples []StartupSample, err error) StartupSide {
	var wall, first, peak, shm []float64
	for _, s := range samples {
		wall, first = append(wall, s.Wall.Seconds()), append(first, s.FirstCollective.Seconds())
		peak, shm = append(peak, float64(s.Mem.InUse)/(1<<20)), append(shm, float64(s.Mem.Shmem)/(1<<20))
	}
	side := StartupSide{Launches: len(samples), WallS: stats.Median(wall), FirstCollectiveS: stats.Median(first),
		PeakMiB: stats.Median(peak), ShmMiB: stats.Median(shm)}
	if err != nil {
		side.Error = err.Error()
	}
	return side
}

// StartupRow is one job size: commtune's side, the reference's if there
// is one, and commtune's wall time and peak memory as ratios of the
// reference's (below 1: commtune starts faster, or smaller), 0 where a
// side has no figure.
type StartupRow struct {
	Ranks     int          `json:"ranks"`
	Commtune  StartupSide  `json:"commtune"`
	Ref       *StartupSide `json:"ref,omitempty"`
	WallRatio float64      `json:"wall_ratio,omitempty"`
	PeakRatio float64      `json:"peak_ratio,omitempty"`
}

// NewStartupRow pairs the two sides at n ranks; ref is nil without a
// reference.
func NewStartupRow(n int, ours StartupSide, ref *StartupSide) StartupRow {
	row := StartupRow{Ranks: n, Commtune: ours, Ref: ref}
	if ref != nil && ours.Launches > 0 && ref.Launches > 0 {
		row.WallRatio = ratio(ours.WallS, ref.WallS)
		row.PeakRatio = ratio(ours.PeakMiB, ref.PeakMiB)
	}
	return row
}

// StartupReport is what `commtune bench startup` prints.
type StartupReport struct {
	Bench     string       `json:"bench"` // "startup"
	Transport string       `json:"transport"`
	Ref       string       `json:"ref,omitempty"` // the MPI compared with
	Rounds    int          `json:"rounds"`        // launches of each side per job size
	CPUs      int          `json:"cpus"`          // this node's: jobs of more ranks are oversubscribed
	Rows      []StartupRow `json:"rows"`
}

// Failed reports whether a launch of r failed.
func (r *StartupReport) Failed() bool {
	for _, row := range r.Rows {
		if row.Commtune.Error != "" || row.Ref != nil && row.Ref.Error != "" {
			return true
		}
	}
	return false
}

// WriteStartupTable prints r: one line per job size, each side's wall
// time, time to the first collective, and peak memory with its shared
// part, then the ratios; a launch's error ends its line.
func WriteStartupTable(w io.Writer, r *StartupReport) error {
	fmt.Fprintf(w, "# commtune bench startup: N ranks on this node (%d CPUs, oversubscribed beyond), transport %s; median of %d launch(es) per side and N; "+
		"wall = launcher start to every rank exited, first coll = to the last rank's first Allreduce; peak = system memory in use (free's used + shared) above idle, shm = Shmem above idle (MiB)",
		r.CPUs, r.Transport, r.Rounds)
	if r.Ref != "" {
		fmt.Fprintf(w, "; ratios = commtune / %s (below 1: commtune is faster or smaller)", r.Ref)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "N\tcommtune wall(s)\tfirst coll(s)\tpeak(MiB)\tshm(MiB)\t")
	if r.Ref != "" {
		fmt.Fprintf(tw, "%s wall(s)\tfirst coll(s)\tpeak(MiB)\tshm(MiB)\twall ratio\tpeak ratio\t", r.Ref)
	}
	fmt.Fprintln(tw)
	for _, row := range r.Rows {
		fmt.Fprintf(tw, "%d\t%s", row.Ranks, sideCells(row.Commtune))
		var errs []string
		if row.Commtune.Error != "" {
			errs = append(errs, "commtune: "+oneLine(row.Commtune.Error))
		}
		if row.Ref != nil {
			fmt.Fprintf(tw, "%s%s\t%s\t", sideCells(*row.Ref), orNone(row.WallRatio, "%.2f"), orNone(row.PeakRatio, "%.2f"))
			if row.Ref.Error != "" {
				errs = append(errs, r.Ref+": "+oneLine(row.Ref.Error))
			}
		}
		// After the last tab, the error runs on without widening a column.
		if len(errs) > 0 {
			fmt.Fprint(tw, "  ", strings.Join(errs, "; "))
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

// sideCells formats a side's four figures as table cells, "-" where no
// launch succeeded.
func sideCells(s StartupSide) string {
	if s.Launches == 0 {
		return "-\t-\t-\t-\t"
	}
	return fmt.Sprintf("%.3f\t%.3f\t%.1f\t%.1f\t", s.WallS, s.FirstCollectiveS, s.PeakMiB, s.ShmMiB)
}

// orNone formats v, or "-" for 0 (no ratio).
func orNone(v float64, format string) string {
	if v == 0 {
		return "-"
	}
	return fmt.Sprintf(format, v)
}

// oneLine folds an error that carries the ranks' stderr into one line of
// the table, cut short: the JSON report keeps it whole.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 200 {
		s = string(r[:200]) + " …"
	}
	return s
}
