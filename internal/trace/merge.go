package trace

import (
	"bufio"
	"container/heap"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
)

// Merge joins the rank files of the one job in dir into one file, out
// ("": dir/commtune-trace-JOB.json), and returns its path. Every rank of
// the job must have its file. The merged file holds every rank's events
// sorted by time and otherData {"format": "commtune-trace-merged",
// "version": 1, "job": ..., "size": ..., "ranks": [each rank's
// otherData]}; it appears under its name only once whole.
func Merge(dir, out string) (string, error) {
	path, _, err := MergeJob(dir, "", out)
	return path, err
}

// MergeJob is Merge for a directory that may hold the traces of several
// jobs: it merges job's ("" is the only one there). It also returns the
// job as read.
func MergeJob(dir, job, out string) (string, *Job, error) {
	j, err := readDir(dir, job, true)
	if err != nil {
		return "", nil, err
	}
	if out == "" {
		out = filepath.Join(dir, MergedFileName(j.ID))
	}
	if err := WriteMerged(out, j); err != nil {
		return "", nil, err
	}
	return out, j, nil
}

// WriteMerged writes j as a merged file at path, atomically: it writes a
// temporary file beside path, syncs it and renames it.
func WriteMerged(path string, j *Job) error {
	if err := checkJobID(j.ID); err != nil {
		return err
	}
	tmp := filepath.Join(filepath.Dir(path), tmpName(filepath.Base(path)))
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("trace: %w", err)
	}
	bw := bufio.NewWriterSize(f, writeBuffer)
	err = encodeMerged(bw, j)
	if err == nil {
		err = bw.Flush()
	}
	if err == nil {
		err = install(f, path)
	} else {
		f.Close()
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("trace: %s: %w", path, err)
	}
	return nil
}

// encodeMerged writes j as a merged file: the ranks' metadata events,
// then every span in order of start time across the ranks (the viewers
// do not need it, a reader of the raw file does), then otherData.
func encodeMerged(w io.Writer, j *Job) error {
	b := make([]byte, 0, 4096)
	b = append(b, fileHead...)
	for i := range j.Ranks {
		if i > 0 {
			b = append(b, eventSep...)
		}
		b = appendMeta(b, &j.Ranks[i])
	}
	h := make(spanHeap, 0, len(j.Ranks))
	for i, s := range j.Spans {
		if len(s) > 0 {
			h = append(h, cursor{rank: j.Ranks[i].Rank, spans: s})
		}
	}
	heap.Init(&h)
	for len(h) > 0 {
		c := &h[0]
		b = append(b, eventSep...)
		b = appendSpan(b, c.rank, &c.spans[0])
		if c.spans = c.spans[1:]; len(c.spans) == 0 {
			heap.Pop(&h)
		} else {
			heap.Fix(&h, 0)
		}
		if len(b) >= writeBuffer/2 {
			if _, err := w.Write(b); err != nil {
				return err
			}
			b = b[:0]
		}
	}
	b = append(b, fileMiddle...)
	b = append(b, `{"format":"`+FormatMerged+`","version":`...)
	b = strconv.AppendInt(b, Version, 10)
	b = append(b, `,"job":`...)
	b = appendString(b, j.ID)
	if len(j.Ranks) > 0 {
		b = append(b, `,"size":`...)
		b = strconv.AppendInt(b, int64(j.Ranks[0].Size), 10)
	}
	b = append(b, `,"ranks":[`...)
	for i := range j.Ranks {
		if i > 0 {
			b = append(b, ',')
		}
		info := j.Ranks[i]
		info.Spans = int64(len(j.Spans[i]))
		b = append(b, "\n"...)
		b = appendRankData(b, &info)
	}
	b = append(b, "]}"+fileEnd...)
	_, err := w.Write(b)
	return err
}

// cursor is the next span of one rank in a merge.
type cursor struct {
	rank  int
	spans []Span // sorted; spans[0] is next
}

// spanHeap orders the ranks' cursors by their next span: by start, then
// rank, then as within a rank.
type spanHeap []cursor

func (h spanHeap) Len() int { return len(h) }
func (h spanHeap) Less(i, j int) bool {
	a, b := &h[i].spans[0], &h[j].spans[0]
	if a.Start != b.Start {
		return a.Start < b.Start
	}
	if h[i].rank != h[j].rank {
		return h[i].rank < h[j].rank
	}
	return compareSpans(*a, *b) < 0
}
func (h spanHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *spanHeap) Push(x any)   { *h = append(*h, x.(cursor)) }
func (h *spanHeap) Pop() any {
	old := *h
	c := old[len(old)-1]
	*h = old[:len(old)-1]
	return c
}
