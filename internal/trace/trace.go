// Package trace writes, reads, checks and merges commtune's timeline files:
// each rank's library calls as spans, in the Chrome trace event format
// (JSON Object Format) that Perfetto and chrome://tracing open. The format
// is described in docs/trace.md.
//
// A rank writes its file with Create, Write and Close as the job runs; the
// spans do not stay in memory, and the file appears under its final name
// only once whole. Read loads a job's trace (a directory of rank files, a
// merged file, or a single rank file), refusing a file that is cut short,
// is not a commtune trace or breaks the format; Merge joins a job's rank
// files into one.
package trace

import (
	"fmt"
	"regexp"
	"strconv"
)

// Span is one library call of one rank.
type Span struct {
	Name string // the call as the API names it: "Allreduce", "Send" ...
	Cat  string // its family: "p2p", "coll", "wait", "halo", "rma", "comm", "recovery"
	// Start and End are nanoseconds on the job clock; End >= Start.
	Start, End int64
	Lane       int    // the lane within the rank (the event's tid), >= 0
	Comm       string // the communicator ("world", "dup 3" ...); "" absent
	Bytes      int64  // this rank's payload; < 0 absent
	// Peer and Root are world ranks: Peer is the other side of a
	// point-to-point call (-1: any source), Root a rooted collective's
	// root. None means absent.
	Peer, Root int
	Alg        string // the algorithm or path that ran; "" absent
	By         string // who chose it ("table", "lottery" ...); "" absent
	Site       string // the program's call site, "file.go:LINE function"; "" absent
	Err        string // the error the call returned; "" absent
}

// None marks Span.Peer or Span.Root absent. It is not -1, which is a
// receive from any source.
const None = -2

// AnySource is Span.Peer of a receive from any source.
const AnySource = -1

// Dur returns the span's length in nanoseconds.
func (s Span) Dur() int64 { return s.End - s.Start }

// RankInfo describes one rank's part of a job's trace: its file's
// otherData.
type RankInfo struct {
	Job        string
	Rank, Size int // world rank and world size
	Host       string
	PID        int // the rank's process id
	// ClockOffsetNs moves the rank's monotonic clock onto the job clock;
	// ClockErrorNs bounds that offset's error.
	ClockOffsetNs, ClockErrorNs int64
	// StartNs and EndNs are Init and the world's Close on the job clock.
	StartNs, EndNs int64
	// Spans is the number of spans in the file, Dropped the number not
	// recorded because the file system refused them.
	Spans, Dropped int64
}

// Wall returns the rank's time from Init to Close, in nanoseconds.
func (r RankInfo) Wall() int64 { return r.EndNs - r.StartNs }

// Job is a whole job's trace.
type Job struct {
	ID string
	// Ranks describes the ranks read, by rank. For a whole job (a
	// directory of rank files or a merged file), Ranks[i].Rank == i; a
	// single rank file gives one rank, whatever its number.
	Ranks []RankInfo
	// Spans[i] are the spans of Ranks[i], sorted by Start, then longer
	// first (a parent before the spans it holds), then by lane.
	Spans [][]Span
}

// SpanCount returns the number of spans of every rank.
func (j *Job) SpanCount() int64 {
	var n int64
	for _, s := range j.Spans {
		n += int64(len(s))
	}
	return n
}

// File formats, the values of otherData.format, and the version this
// package writes and reads.
const (
	FormatRank   = "commtune-trace"
	FormatMerged = "commtune-trace-merged"
	Version      = 1
)

// File names: rank files, their temporary names while written, and
// merged files.
const (
	filePrefix = "commtune-trace-"
	fileSuffix = ".json"
	tmpSuffix  = ".tmp"
)

var (
	rankFileRE   = regexp.MustCompile(`^commtune-trace-(.+)-rank-([0-9]+)\.json$`)
	tmpFileRE    = regexp.MustCompile(`^\.commtune-trace-(.+)-rank-([0-9]+)\.json\.tmp$`)
	mergedFileRE = regexp.MustCompile(`^commtune-trace-(.+)\.json$`)
)

// RankFileName returns the name of rank's file of job:
// "commtune-trace-JOB-rank-R.json", R not zero-padded.
func RankFileName(job string, rank int) string {
	return filePrefix + job + "-rank-" + strconv.Itoa(rank) + fileSuffix
}

// MergedFileName returns the name Merge gives job's merged file by
// default: "commtune-trace-JOB.json".
func MergedFileName(job string) string {
	return filePrefix + job + fileSuffix
}

// tmpName returns the name a file is written under until it is whole: a
// hidden name, so that a listing of final files does not see it.
func tmpName(name string) string { return "." + name + tmpSuffix }

// fileKind is what a file's name says it holds.
type fileKind int

const (
	kindOther  fileKind = iota
	kindRank            // commtune-trace-JOB-rank-R.json
	kindTmp             // .commtune-trace-JOB-rank-R.json.tmp
	kindMerged          // commtune-trace-JOB.json
)

// parseName tells what the file name holds and, for a trace file, its job
// and rank (-1 for a merged file).
func parseName(name string) (kind fileKind, job string, rank int) {
	if m := rankFileRE.FindStringSubmatch(name); m != nil {
		if r, err := strconv.Atoi(m[2]); err == nil {
			return kindRank, m[1], r
		}
	}
	if m := tmpFileRE.FindStringSubmatch(name); m != nil {
		if r, err := strconv.Atoi(m[2]); err == nil {
			return kindTmp, m[1], r
		}
	}
	if m := mergedFileRE.FindStringSubmatch(name); m != nil {
		return kindMerged, m[1], -1
	}
	return kindOther, "", -1
}

// maxJobID bounds a job id, as the launcher does.
const maxJobID = 64

// checkJobID refuses a job id that could not name a file in the trace
// directory: 1 to 64 of A-Z a-z 0-9 . _ -, the launcher's own rule.
func checkJobID(id string) error {
	if id == "" || len(id) > maxJobID || id == "." || id == ".." {
		return fmt.Errorf("trace: job id %q: want 1 to %d of A-Z a-z 0-9 . _ -", id, maxJobID)
	}
	for _, c := range []byte(id) {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '.', c == '_', c == '-':
		default:
			return fmt.Errorf("trace: job id %q: want 1 to %d of A-Z a-z 0-9 . _ -", id, maxJobID)
		}
	}
	return nil
}
