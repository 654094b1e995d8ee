package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
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

// EnvStartupAlltoall, when set, has each rank of a startup job exchange
// that many bytes with every other rank after the first collective
// (StartupAlltoalls Alltoalls of int64s, checked), so that the job's peak
// memory shows what dense traffic costs, not only start-up.
const EnvStartupAlltoall = "COMMTUNE_BENCH_ALLTOALL"

// StartupAlltoalls is how many Alltoalls EnvStartupAlltoall asks for.
const StartupAlltoalls = 10

// ParseStartupAlltoall parses EnvStartupAlltoall's value: bytes per peer,
// a multiple of 8 (0 or unset: none).
func ParseStartupAlltoall(s string) (int, error) {
	if s == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || n < 0 || n%8 != 0 {
		return 0, fmt.Errorf("%s=%q: want bytes per peer, a multiple of 8", EnvStartupAlltoall, s)
	}
	return n, nil
}

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
// first done, so that rank 0 learns the latest; then, if alltoall > 0,
// StartupAlltoalls Alltoalls of that many bytes per peer, each checked.
// Rank 0 returns its line, the others nil.
func Startup(ctx context.Context, c *commtune.Comm, start time.Time, alltoall int) (*StartupRank, error) {
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
	if err := denseTraffic(ctx, c, alltoall/8); err != nil {
		return nil, err
	}
	if c.Rank() != 0 {
		return nil, nil
	}
	return &StartupRank{Ranks: n, FirstCollectiveNS: latest[0] - start.UnixNano()}, nil
}

// denseTraffic runs StartupAlltoalls Alltoalls of per int64s per peer
// and checks each: element k of the block rank r sends rank q is
// r·n + q + k + call.
func denseTraffic(ctx context.Context, c *commtune.Comm, per int) error {
	if per == 0 {
		return nil
	}
	n, me := c.Size(), c.Rank()
	send, recv := make([]int64, n*per), make([]int64, n*per)
	for call := range StartupAlltoalls {
		for q := range n {
			for k := range per {
				send[q*per+k] = int64(me*n + q + k + call)
			}
		}
		if err := commtune.Alltoall(ctx, c, send, recv); err != nil {
			return err
		}
		for r := range n {
			for k := range per {
				if want := int64(r*n + me + k + call); recv[r*per+k] != want {
					return fmt.Errorf("alltoall %d: element %d from rank %d is %d, want %d", call, k, r, recv[r*per+k], want)
				}
			}
		}
	}
	return nil
}

// ProcPath is where Linux lists its processes.
const ProcPath = "/proc"

// MemInfoPath is where Linux reports the system's memory.
const MemInfoPath = "/proc/meminfo"

// MemInfo is the part of /proc/meminfo a startup job's memory is read
// from, in bytes. Only shared memory is: the system's other counts
// (MemFree, Cached …) move with the hypervisor's ballooning and free
// page reporting on a VM, so that `free`'s used counted 0.8 MiB for 64
// ranks of Open MPI; the ranks' own memory is their Pss (SmapsRollup).
type MemInfo struct {
	// Shmem is tmpfs, hence /dev/shm: the rings of both commtune and
	// MPI, whether or not a process still maps them.
	Shmem int64
}

// SmapsRollup is the part of a process's /proc/PID/smaps_rollup a
// startup job's memory is read from, in bytes.
type SmapsRollup struct {
	// Pss is the proportional set size: the process's private pages,
	// plus each page it shares divided by the number of processes
	// mapping it. Summed over processes, a shared memory segment counts
	// once, whatever the number of ranks mapping it.
	Pss int64
}

// maxKB bounds a value in kB read from /proc (1 EiB): in bytes it fits
// an int64 eight times over; TreePss checks its sum over processes.
const maxKB = 1 << 50

// kBField is a line parseKB wants, "Name: value kB", and where its value
// goes, in bytes.
type kBField struct {
	name string
	dst  *int64
}

// parseKB parses text, the contents of the /proc file named file, for
// fields: each must appear once, as "Name: value kB"; other lines are
// not read, since kernels add and drop them.
func parseKB(file string, text []byte, fields ...kBField) error {
	seen := make([]bool, len(fields))
	for i, line := range strings.Split(string(text), "\n") {
		name, rest, _ := strings.Cut(line, ":")
		k := slices.IndexFunc(fields, func(f kBField) bool { return f.name == name })
		if k < 0 {
			continue
		}
		if seen[k] {
			return fmt.Errorf("%s line %d: a second %s line", file, i+1, name)
		}
		seen[k] = true
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return fmt.Errorf("%s line %d %q: want %q", file, i+1, line, name+": VALUE kB")
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil || kb < 0 || kb > maxKB {
			return fmt.Errorf("%s line %d %q: %q is not a size in kB from 0 to %d", file, i+1, line, f[0], int64(maxKB))
		}
		*fields[k].dst = kb << 10
	}
	for k, f := range fields {
		if !seen[k] {
			return fmt.Errorf("%s: no %s line", file, f.name)
		}
	}
	return nil
}

// ParseMemInfo parses the text of /proc/meminfo.
func ParseMemInfo(text []byte) (MemInfo, error) {
	var m MemInfo
	if err := parseKB("meminfo", text, kBField{"Shmem", &m.Shmem}); err != nil {
		return MemInfo{}, err
	}
	return m, nil
}

// ParseSmapsRollup parses the text of /proc/PID/smaps_rollup.
func ParseSmapsRollup(text []byte) (SmapsRollup, error) {
	var r SmapsRollup
	if err := parseKB("smaps_rollup", text, kBField{"Pss", &r.Pss}); err != nil {
		return SmapsRollup{}, err
	}
	return r, nil
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

// parseStatPPID returns the parent's pid from the text of /proc/PID/stat,
// "pid (comm) state ppid …". The program's name, comm, may hold spaces
// and parentheses, so the fields are counted from the last ')'.
func parseStatPPID(text []byte) (int, error) {
	i := bytes.LastIndexByte(text, ')')
	if i < 0 {
		return 0, fmt.Errorf("stat %.80q: no ')' closing the program's name", text)
	}
	f := bytes.Fields(text[i+1:])
	if len(f) < 2 {
		return 0, fmt.Errorf("stat %.80q: no parent pid after the state", text)
	}
	ppid, err := strconv.Atoi(string(f[1]))
	if err != nil || ppid < 0 {
		return 0, fmt.Errorf("stat %.80q: parent pid %.20q is not a pid", text, f[1])
	}
	return ppid, nil
}

// gone reports whether err says a process exited while it was being read:
// its directory is gone, or (a zombie's smaps_rollup) its memory is.
func gone(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ESRCH)
}

// readProcFile reads a file of proc into buf, grown if need be: the
// files are small and a sample reads hundreds of them.
func readProcFile(path string, buf []byte) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return buf, err
	}
	defer f.Close()
	buf = buf[:0]
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := f.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}

// TreePss returns the Pss summed over the processes listed in proc (a
// /proc) that descend from root, root itself left out, and how many
// there were. Parents are read from each process's stat; a process that
// exits meanwhile is left out, a file that cannot be parsed is an error.
func TreePss(proc string, root int) (pss int64, procs int, err error) {
	entries, err := os.ReadDir(proc)
	if err != nil {
		return 0, 0, err
	}
	buf := make([]byte, 0, 4096)
	children := map[int][]int{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid <= 0 {
			continue // not a process: meminfo, self …
		}
		path := filepath.Join(proc, e.Name(), "stat")
		if buf, err = readProcFile(path, buf); err != nil {
			if gone(err) {
				continue
			}
			return 0, 0, err
		}
		ppid, err := parseStatPPID(buf)
		if err != nil {
			return 0, 0, fmt.Errorf("%s: %w", path, err)
		}
		children[ppid] = append(children[ppid], pid)
	}
	for todo := children[root]; len(todo) > 0; {
		pid := todo[len(todo)-1]
		todo = append(todo[:len(todo)-1], children[pid]...)
		path := filepath.Join(proc, strconv.Itoa(pid), "smaps_rollup")
		if buf, err = readProcFile(path, buf); err != nil {
			if gone(err) {
				continue
			}
			return 0, 0, err
		}
		r, err := ParseSmapsRollup(buf)
		if err != nil {
			return 0, 0, fmt.Errorf("%s: %w", path, err)
		}
		if r.Pss > math.MaxInt64-pss {
			return 0, 0, fmt.Errorf("%s: the sum of Pss overflows", path)
		}
		pss += r.Pss
		procs++
	}
	return pss, procs, nil
}

// MemSample is one look at a job's memory, in bytes.
type MemSample struct {
	Pss   int64 // summed over the job's processes
	Procs int   // the job's processes
	Shmem int64 // the whole system's (MemInfo)
}

// A MemReader takes a MemSample of the job whose processes descend from
// root, root itself left out; while root is 0 the job has no process yet.
type MemReader func(root int) (MemSample, error)

// SystemMemory is this machine's MemReader: MemInfoPath's Shmem, and
// TreePss over ProcPath.
func SystemMemory(root int) (MemSample, error) {
	m, err := SystemMemInfo()
	if err != nil || root == 0 {
		return MemSample{Shmem: m.Shmem}, err
	}
	pss, procs, err := TreePss(ProcPath, root)
	return MemSample{Pss: pss, Procs: procs, Shmem: m.Shmem}, err
}

// CheckSystemMemory reports why SystemMemory cannot work on this machine
// (no /proc, or a kernel without smaps_rollup, before 4.14), or nil.
func CheckSystemMemory() error {
	if _, err := SystemMemInfo(); err != nil {
		return err
	}
	path := filepath.Join(ProcPath, "self", "smaps_rollup")
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if _, err := ParseSmapsRollup(b); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// DefaultMemEvery is how often a MemWatch samples at most, when not
// told: often enough to see a small job's ranks all alive together,
// launching 8 ranks taking longer than that.
//
// A sample is not cheap: the kernel walks each process's page tables to
// split its shared pages. Measured on the 2-CPU VM this was written on,
// one took 13 ms of processor time at 64 ranks of commtune (Go, 5 MiB of
// Pss each), 26 ms at 64 of Open MPI (a hundred libraries mapped each),
// 39 and 130 ms at 256. Every 25 ms would take half a processor or more
// from jobs of 64 ranks; memSampleDuty spaces samples out as they grow.
const DefaultMemEvery = 25 * time.Millisecond

// memSampleDuty is how many times a sample's processor time a MemWatch
// waits, at least, before the next: the sampler takes at most a tenth of
// a processor from the job, 5 % of the 2-CPU VM, so every 120 to 250 ms at
// 64 ranks. It is the sampler's processor time, not its wall time, that
// is spaced: while the ranks keep every processor busy, a sample waits
// for one far longer than it runs, and spacing by wall time missed the
// moment all 64 Open MPI ranks were alive.
const memSampleDuty = 9

// threadSchedstat is where Linux tells a thread how long it has run: the
// first field, in ns (the others are time spent waiting and the number
// of times it ran).
const threadSchedstat = "/proc/thread-self/schedstat"

// threadCPU returns how long the calling thread, locked to it, has run,
// or false where Linux does not say (no /proc, or a kernel without
// schedstats, which reports 0).
func threadCPU(buf []byte) (time.Duration, bool) {
	b, err := readProcFile(threadSchedstat, buf)
	if err != nil {
		return 0, false
	}
	f := bytes.Fields(b)
	if len(f) == 0 {
		return 0, false
	}
	ns, err := strconv.ParseInt(string(f[0]), 10, 64)
	if err != nil || ns <= 0 {
		return 0, false
	}
	return time.Duration(ns), true
}

// MemPeak is what a MemWatch saw of the job: the highest sum of its
// processes' Pss over every sample, and how far the system's shared
// memory rose above its idle sample (at its highest sample, not
// necessarily the same one; never negative).
type MemPeak struct {
	Pss     int64
	Procs   int // the most processes a sample found
	Shmem   int64
	Samples int // taken after the idle one
	// SampleCPU is the mean processor time a sample took, what sampling
	// cost the job (its wall time where the processor time is unknown).
	SampleCPU time.Duration
}

// MemWatch samples memory from a goroutine between WatchMemory and Stop.
type MemWatch struct {
	read       MemReader
	root       atomic.Int64 // the pid the job's processes descend from, once known
	idle       MemSample
	peak       MemPeak // Shmem: the highest, idle's included
	sampling   time.Duration
	err        error // the first a sample met; sampling stops there
	stop, done chan struct{}
}

// WatchMemory takes the idle sample with read, then samples every every
// (0: DefaultMemEvery), or memSampleDuty times the processor time the
// last sample took if longer, from a goroutine until Stop. Until Root is
// called it samples no process.
func WatchMemory(read MemReader, every time.Duration) (*MemWatch, error) {
	if every <= 0 {
		every = DefaultMemEvery
	}
	idle, err := read(0)
	if err != nil {
		return nil, err
	}
	w := &MemWatch{read: read, idle: idle, peak: MemPeak{Shmem: idle.Shmem},
		stop: make(chan struct{}), done: make(chan struct{})}
	go w.loop(every)
	return w, nil
}

// Root sets the process whose descendants are the job's: the launcher,
// itself not counted.
func (w *MemWatch) Root(pid int) { w.root.Store(int64(pid)) }

func (w *MemWatch) loop(every time.Duration) {
	defer close(w.done)
	// One thread, for threadCPU to time.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	buf := make([]byte, 0, 128)
	timer := time.NewTimer(every)
	defer timer.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-timer.C:
		}
		start := time.Now()
		cpu0, ok0 := threadCPU(buf)
		s, err := w.read(int(w.root.Load()))
		took := time.Since(start)
		if cpu1, ok1 := threadCPU(buf); ok0 && ok1 {
			took = cpu1 - cpu0
		}
		if err != nil {
			w.err = err
			return
		}
		w.peak.Samples++
		w.sampling += took
		w.peak.Pss = max(w.peak.Pss, s.Pss)
		w.peak.Procs = max(w.peak.Procs, s.Procs)
		w.peak.Shmem = max(w.peak.Shmem, s.Shmem)
		timer.Reset(max(every, memSampleDuty*took))
	}
}

// Stop ends the sampling and returns the peaks; the error is the one a
// sample met, after which there were no more.
func (w *MemWatch) Stop() (MemPeak, error) {
	close(w.stop)
	<-w.done
	p := w.peak
	p.Shmem -= w.idle.Shmem
	if p.Samples > 0 {
		p.SampleCPU = w.sampling / time.Duration(p.Samples)
	}
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
// returns both. launch calls root with the pid of the job's launcher as
// soon as it is known: the launcher's descendants are the job's
// processes.
func MeasureStartup(read MemReader, every time.Duration, launch func(root func(pid int)) (StartupTimes, error)) (StartupSample, error) {
	w, err := WatchMemory(read, every)
	if err != nil {
		return StartupSample{}, fmt.Errorf("idle memory: %w", err)
	}
	t, err := launch(w.Root)
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
	PeakPssMiB       float64 `json:"peak_pss_mib"` // MemPeak.Pss
	ShmMiB           float64 `json:"shm_mib"`      // MemPeak.Shmem
	// Procs is the most processes a sample found in a launch: the ranks,
	// and any helper the launcher starts (MPICH's proxy), not the
	// launcher itself. Below the job's size, no sample saw every rank
	// alive and the peak may be low.
	Procs       int     `json:"procs"`
	SampleCPUMS float64 `json:"sample_cpu_ms"` // MemPeak.SampleCPU: what sampling cost
	Error       string  `json:"error,omitempty"`
}

// StartupSideOf summarizes one side's launches at one job size; err is
// the first that failed, if one did.
func StartupSideOf(samples []StartupSample, err error) StartupSide {
	var wall, first, pss, shm, sampleCPU []float64
	procs := 0
	for _, s := range samples {
		wall, first = append(wall, s.Wall.Seconds()), append(first, s.FirstCollective.Seconds())
		pss, shm = append(pss, float64(s.Mem.Pss)/(1<<20)), append(shm, float64(s.Mem.Shmem)/(1<<20))
		sampleCPU = append(sampleCPU, float64(s.Mem.SampleCPU)/float64(time.Millisecond))
		procs = max(procs, s.Mem.Procs)
	}
	side := StartupSide{Launches: len(samples), WallS: stats.Median(wall), FirstCollectiveS: stats.Median(first),
		PeakPssMiB: stats.Median(pss), ShmMiB: stats.Median(shm), Procs: procs, SampleCPUMS: stats.Median(sampleCPU)}
	if err != nil {
		side.Error = err.Error()
	}
	return side
}

// StartupRow is one job size: commtune's side, the reference's if there
// is one, and commtune's wall time and peak Pss as ratios of the
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
		row.PeakRatio = ratio(ours.PeakPssMiB, ref.PeakPssMiB)
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
// time, time to the first collective, peak Pss and shared memory, then
// the ratios; a launch's error ends its line.
func WriteStartupTable(w io.Writer, r *StartupReport) error {
	fmt.Fprintf(w, "# commtune bench startup: N ranks on this node (%d CPUs, oversubscribed beyond), transport %s; median of %d launch(es) per side and N; "+
		"wall = launcher start to every rank exited, first coll = to the last rank's first Allreduce; "+
		"peak = the highest sum over the job's processes of their Pss (smaps_rollup: shared pages split among the processes mapping them), sampled every %v or more, "+
		"the launcher's own left out on both sides (commtune's runs in this process, which also samples); shm = the system's Shmem above idle (MiB)",
		r.CPUs, r.Transport, r.Rounds, DefaultMemEvery)
	if r.Ref != "" {
		fmt.Fprintf(w, "; ratios = commtune / %s (below 1: commtune is faster or smaller)", r.Ref)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "N\tcommtune wall(s)\tfirst coll(s)\tpeak Pss(MiB)\tshm(MiB)\t")
	if r.Ref != "" {
		fmt.Fprintf(tw, "%s wall(s)\tfirst coll(s)\tpeak Pss(MiB)\tshm(MiB)\twall ratio\tpeak ratio\t", r.Ref)
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
	return fmt.Sprintf("%.3f\t%.3f\t%.1f\t%.1f\t", s.WallS, s.FirstCollectiveS, s.PeakPssMiB, s.ShmMiB)
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
