package bench

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"
)

// RankUsage is what one rank of a soak holds at a sample.
type RankUsage struct {
	// RSS is the process's resident memory (VmRSS of /proc/self/status),
	// read after runtime.GC and debug.FreeOSMemory: garbage collections
	// (two, so that what sync.Pools held is freed too), then the freed
	// heap handed back to the system, so that it counts what is live and
	// not what the collector has yet to return.
	RSS int64
	// RSSAnon, RSSFile and RSSShmem split RSS as the kernel counts it
	// (RssAnon, RssFile, RssShmem of /proc/self/status): the heap, stacks
	// and the runtime's own memory; pages of the program's files (its
	// code, which the ranks share and which grows as rarer paths first
	// run); shared memory touched.
	RSSAnon, RSSFile, RSSShmem int64
	// GoHeap is the heap the collector found live (runtime/metrics
	// /gc/heap/live:bytes) at the collection before the sample.
	GoHeap int64
	// ShmMapped is the size of the shared-memory files the process maps
	// (/dev/shm mappings in /proc/self/smaps, removed files included):
	// the rings, node segments and windows it holds, whether or not their
	// files are still listed. A node region's file is removed as soon as
	// every rank has it mapped, so a mapping never unmapped shows here and
	// nowhere else.
	ShmMapped int64
	// FDs is the number of open descriptors (entries of /proc/self/fd),
	// the fewest seen over settleTime.
	FDs int64
	// Goroutines is runtime.NumGoroutine, the fewest seen over
	// settleTime: the library's agents that end after a Free or Close do
	// so within it.
	Goroutines int64
}

// settleTime is how long a sample watches the goroutine and descriptor
// counts for their lowest, after the barrier that makes the job
// quiescent.
const settleTime = 100 * time.Millisecond

// ReadRankUsage samples this process, as RankUsage says.
func ReadRankUsage() (RankUsage, error) {
	// Two collections: the first moves what sync.Pools hold to their
	// victim caches, the second (FreeOSMemory's) frees those, so that
	// buffers pooled by the last steps do not count.
	runtime.GC()
	debug.FreeOSMemory()
	var u RankUsage
	// Resident memory first, before the settling below allocates.
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return u, err
	}
	if err := parseKB("status", status, kBField{"VmRSS", &u.RSS}, kBField{"RssAnon", &u.RSSAnon},
		kBField{"RssFile", &u.RSSFile}, kBField{"RssShmem", &u.RSSShmem}); err != nil {
		return u, err
	}
	u.FDs, u.Goroutines = -1, -1
	for end := time.Now().Add(settleTime); ; {
		fds, err := countFDs()
		if err != nil {
			return u, err
		}
		g := int64(runtime.NumGoroutine())
		if u.FDs < 0 || fds < u.FDs {
			u.FDs = fds
		}
		if u.Goroutines < 0 || g < u.Goroutines {
			u.Goroutines = g
		}
		if time.Now().After(end) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	live := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(live)
	if live[0].Value.Kind() == metrics.KindUint64 {
		u.GoHeap = int64(live[0].Value.Uint64())
	}
	smaps, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		return u, err
	}
	if u.ShmMapped, err = ParseShmMapped(smaps); err != nil {
		return u, err
	}
	return u, nil
}

// countFDs counts the entries of /proc/self/fd, less the one reading it.
func countFDs() (int64, error) {
	f, err := os.Open("/proc/self/fd")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	return int64(len(names)) - 1, err
}

// shmDir is where the job's shared-memory files live.
const shmDir = "/dev/shm/"

// ParseShmMapped returns the bytes of the mappings of files under
// /dev/shm in the text of /proc/PID/smaps: the Size of each mapping whose
// path starts there (a removed file's path ends in " (deleted)").
func ParseShmMapped(text []byte) (int64, error) {
	var total int64
	inShm := false
	sc := bufio.NewScanner(bytes.NewReader(text))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for line := 1; sc.Scan(); line++ {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		// A mapping's first line starts with its address range, lo-hi in
		// hex; its fields follow, "Name: value [kB]".
		if !strings.HasSuffix(f[0], ":") {
			if len(f) < 5 || !strings.Contains(f[0], "-") {
				return 0, fmt.Errorf("smaps line %d %q: not a mapping", line, sc.Text())
			}
			inShm = len(f) >= 6 && strings.HasPrefix(f[5], shmDir)
			continue
		}
		if f[0] != "Size:" || !inShm {
			continue
		}
		if len(f) != 3 || f[2] != "kB" {
			return 0, fmt.Errorf("smaps line %d %q: want Size: VALUE kB", line, sc.Text())
		}
		kb, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil || kb < 0 || kb > maxKB {
			return 0, fmt.Errorf("smaps line %d %q: %q is not a size in kB", line, sc.Text(), f[1])
		}
		total += kb << 10
	}
	return total, sc.Err()
}

// JobShmFiles returns the total size of job's files in /dev/shm
// (commtune-JOB-*: its ranks' segments, pipes and bells), 0 for no job.
// Ranks remove those files as soon as they have them open, so in a sound
// job this is 0 after start-up: it counts files left behind. Files
// removed while it reads are left out.
func JobShmFiles(job string) (int64, error) {
	if job == "" {
		return 0, nil
	}
	names, err := filepath.Glob(filepath.Join(shmDir, "commtune-"+job+"-*"))
	if err != nil {
		return 0, err
	}
	var total int64
	for _, n := range names {
		if st, err := os.Stat(n); err == nil {
			total += st.Size()
		}
	}
	return total, nil
}

// writeHeapProfile writes this process's heap profile, after the
// collections ReadRankUsage made, as dir/heap-rank-RANK-K.pb.gz, and the
// runtime's memory classes (every /memory/classes/ metric, bytes; read
// first, before the profile's encoding allocates) as
// dir/mem-rank-RANK-K.json: the heap's live objects, its unused and
// released spans, stacks and the runtime's own, which together make the
// anonymous part of RSS.
func writeHeapProfile(dir string, rank, k int) error {
	err := writeAtomically(dir, fmt.Sprintf("mem-rank-%d-%d.json", rank, k), func(w io.Writer) error {
		var samples []metrics.Sample
		for _, d := range metrics.All() {
			if strings.HasPrefix(d.Name, "/memory/classes/") {
				samples = append(samples, metrics.Sample{Name: d.Name})
			}
		}
		metrics.Read(samples)
		classes := map[string]uint64{}
		for _, s := range samples {
			if s.Value.Kind() == metrics.KindUint64 {
				classes[s.Name] = s.Value.Uint64()
			}
		}
		return json.NewEncoder(w).Encode(classes)
	})
	if err != nil {
		return err
	}
	return writeAtomically(dir, fmt.Sprintf("heap-rank-%d-%d.pb.gz", rank, k), func(w io.Writer) error {
		return pprof.Lookup("heap").WriteTo(w, 0)
	})
}

// writeAtomically writes dir/name through a temporary file, so that no
// reader sees half of one.
func writeAtomically(dir, name string, write func(io.Writer) error) error {
	path := filepath.Join(dir, name)
	tmp, err := os.CreateTemp(dir, "."+name+"-*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	err = write(tmp)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
