package trace

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// ErrSeveralJobs is returned by Read for a directory that holds the
// traces of more than one job: ReadJob picks one.
var ErrSeveralJobs = errors.New("traces of several jobs")

// ErrIncomplete is returned for a directory in which a rank of the job has
// no file, or only the temporary file of a rank that did not finish.
var ErrIncomplete = errors.New("incomplete trace")

// ErrNoTrace is returned for a directory that holds no trace file.
var ErrNoTrace = errors.New("no commtune trace files")

// Read reads the trace at path: a directory holding one job's rank files
// (or only its merged file), a merged file, or a single rank file. Every
// file is checked against the format, as Validate does, and every error
// names the file.
func Read(path string) (*Job, error) {
	return ReadJob(path, "")
}

// ReadJob is Read for a directory that may hold the traces of several
// jobs: it reads job's ("" is the only one there). For a file, job ""
// accepts any job, and another must be the file's.
func ReadJob(path, job string) (*Job, error) {
	fi, err := stat(path)
	if err != nil {
		return nil, err
	}
	if fi.IsDir() {
		return readDir(path, job, false)
	}
	j, err := readFile(path)
	if err != nil {
		return nil, err
	}
	if job != "" && j.ID != job {
		return nil, fmt.Errorf("%s: the trace of job %s, not %s", path, j.ID, job)
	}
	return j, nil
}

// stat is os.Stat with an error that names path once and says what is
// missing.
func stat(path string) (fs.FileInfo, error) {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w", path, syscall.ENOENT) // "no such file or directory"; errors.Is fs.ErrNotExist
	}
	return fi, err
}

// readFile reads one rank or merged file.
func readFile(path string) (*Job, error) {
	if kind, job, rank := parseName(filepath.Base(path)); kind == kindTmp {
		return nil, fmt.Errorf("%s: %w: the temporary file of rank %d of job %s: %s", path, ErrIncomplete, rank, job, unfinished)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	j, err := readData(f, fi.Size())
	if errors.Is(err, ErrCutShort) {
		return nil, fmt.Errorf("%s: %w (the file of a rank that did not finish writing it?)", path, err)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return j, nil
}

// unfinished says what a rank's temporary file means.
const unfinished = "the rank did not close its communicator (it crashed, was killed, or is still running)"

// readData parses and checks one file's contents and makes them a Job.
func readData(r io.Reader, size int64) (*Job, error) {
	c, err := parse(r, size)
	if err != nil {
		return nil, err
	}
	j := &Job{ID: c.job, Ranks: c.ranks, Spans: make([][]Span, len(c.ranks))}
	for i, info := range c.ranks {
		j.Spans[i] = c.spans[info.Rank]
	}
	return j, nil
}

// dirFiles are a directory's trace files of one job.
type dirFiles struct {
	ranks  map[int]string // rank files by rank
	tmps   map[int]string // temporary files by rank
	merged string
}

// listDir finds the trace files in dir, by job.
func listDir(dir string) (map[string]*dirFiles, error) {
	fi, err := stat(dir)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("%s: not a directory", dir)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	jobs := map[string]*dirFiles{}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		kind, job, rank := parseName(e.Name())
		if kind == kindOther {
			continue
		}
		d := jobs[job]
		if d == nil {
			d = &dirFiles{ranks: map[int]string{}, tmps: map[int]string{}}
			jobs[job] = d
		}
		path := filepath.Join(dir, e.Name())
		switch kind {
		case kindRank:
			d.ranks[rank] = path
		case kindTmp:
			d.tmps[rank] = path
		case kindMerged:
			d.merged = path
		}
	}
	return jobs, nil
}

// pickJob returns job's files in dir: the only job's when job is "".
func pickJob(dir, job string) (string, *dirFiles, error) {
	jobs, err := listDir(dir)
	if err != nil {
		return "", nil, err
	}
	ids := make([]string, 0, len(jobs))
	for id := range jobs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	switch {
	case len(ids) == 0:
		return "", nil, fmt.Errorf("%s: %w (%s*%s)", dir, ErrNoTrace, filePrefix, fileSuffix)
	case job == "" && len(ids) > 1:
		return "", nil, fmt.Errorf("%s: %w: %s", dir, ErrSeveralJobs, strings.Join(ids, ", "))
	case job == "":
		job = ids[0]
	case jobs[job] == nil:
		return "", nil, fmt.Errorf("%s: %w of job %s (jobs here: %s)", dir, ErrNoTrace, job, strings.Join(ids, ", "))
	}
	return job, jobs[job], nil
}

// readDir reads job's trace in dir: its rank files, or without them its
// merged file unless ranksOnly.
func readDir(dir, job string, ranksOnly bool) (*Job, error) {
	job, files, err := pickJob(dir, job)
	if err != nil {
		return nil, err
	}
	if len(files.ranks) == 0 {
		if files.merged != "" && !ranksOnly {
			j, err := readFile(files.merged)
			if err == nil && j.ID != job {
				err = fmt.Errorf("%s: %w: the name says job %s, otherData job %s", files.merged, ErrInvalid, job, j.ID)
			}
			return j, err
		}
		if len(files.tmps) > 0 {
			return nil, fmt.Errorf("%s: %w: job %s: no rank finished its file, only temporary ones (%s): %s",
				dir, ErrIncomplete, job, strings.Join(sortedPaths(files.tmps), ", "), strings.Replace(unfinished, "the rank", "the ranks", 1))
		}
		return nil, fmt.Errorf("%s: job %s: no rank files to merge (only %s)", dir, job, filepath.Base(files.merged))
	}
	j := &Job{ID: job}
	for _, path := range sortedPaths(files.ranks) {
		rj, err := readFile(path)
		if err != nil {
			return nil, err
		}
		info := rj.Ranks[0]
		_, _, rank := parseName(filepath.Base(path))
		if len(rj.Ranks) != 1 || info.Rank != rank || info.Job != job {
			return nil, fmt.Errorf("%s: %w: the name says rank %d of job %s, otherData rank %d of job %s", path, ErrInvalid, rank, job, info.Rank, info.Job)
		}
		if len(j.Ranks) > 0 && info.Size != j.Ranks[0].Size {
			return nil, fmt.Errorf("%s: %w: rank %d says the job has %d ranks, rank %d says %d", path, ErrInvalid, rank, info.Size, j.Ranks[0].Rank, j.Ranks[0].Size)
		}
		j.Ranks = append(j.Ranks, info)
		j.Spans = append(j.Spans, rj.Spans[0])
	}
	if err := complete(dir, j, files); err != nil {
		return nil, err
	}
	return j, nil
}

// complete checks that j, read from dir, has every rank of its job.
func complete(dir string, j *Job, files *dirFiles) error {
	size := j.Ranks[0].Size
	if len(j.Ranks) == size {
		return nil // ranks are distinct, each below size: all there
	}
	var missing []string
	for r := 0; r < size && len(missing) < 8; r++ {
		if _, ok := files.ranks[r]; ok {
			continue
		}
		if tmp, ok := files.tmps[r]; ok {
			missing = append(missing, fmt.Sprintf("rank %d left only %s: %s", r, filepath.Base(tmp), unfinished))
		} else {
			missing = append(missing, fmt.Sprintf("rank %d wrote no file", r))
		}
	}
	return fmt.Errorf("%s: %w: job %s has %d ranks, %d of them wrote their file: %s", dir, ErrIncomplete, j.ID, size, len(j.Ranks), strings.Join(missing, "; "))
}

// sortedPaths returns the paths of m by rank.
func sortedPaths(m map[int]string) []string {
	ranks := make([]int, 0, len(m))
	for r := range m {
		ranks = append(ranks, r)
	}
	slices.Sort(ranks)
	out := make([]string, len(ranks))
	for i, r := range ranks {
		out[i] = m[r]
	}
	return out
}

// Validate checks data, a rank file's or a merged file's contents,
// against the format: a JSON object with traceEvents and otherData, of
// this format and version; every event with its fields (name, ph X or M,
// pid, tid, and for a span ts and dur >= 0) and args of the right types;
// spans only of the ranks otherData describes, no rank twice, and each
// rank's count of spans as otherData says; the spans of each rank's lane
// following each other or nested, never partly overlapping.
func Validate(data []byte) error {
	_, err := parse(bytes.NewReader(data), int64(len(data)))
	return err
}

// ReadChecked reads the rank files of the one job in dir after checking
// each with Validate, and that there are ranks of them: what a test of a
// traced job asks of its directory.
func ReadChecked(dir string, ranks int) (*Job, error) {
	files, err := filepath.Glob(filepath.Join(dir, "commtune-trace-*-rank-*.json"))
	if err != nil {
		return nil, err
	}
	if len(files) != ranks {
		return nil, fmt.Errorf("%s: %d rank files, want %d: %v", dir, len(files), ranks, files)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		if err := Validate(data); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
	}
	return Read(dir)
}
