package trace

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// RankWriter writes one rank's file as its spans end. It is not safe for
// concurrent use: the caller serializes its spans.
type RankWriter struct {
	info  RankInfo
	dir   string
	tmp   string // the file as written: dir/.commtune-trace-JOB-rank-R.json.tmp
	f     *os.File
	w     *bufio.Writer
	buf   []byte // one event, reused
	spans int64
	err   error // the first write error: the file is lost after it
	done  bool  // closed or aborted
}

// writeBuffer is the writer's buffer: large enough that a busy rank
// writes to the file system every few hundred spans, not every span.
const writeBuffer = 256 << 10

// errClosed is returned by a writer's methods after Close or Abort.
var errClosed = errors.New("trace: rank writer already closed")

// Create starts info's rank file in dir under a temporary name,
// ".commtune-trace-JOB-rank-R.json.tmp", and writes its head: the rank's
// two metadata events. info.EndNs, Spans and Dropped are set by Close.
func Create(dir string, info RankInfo) (*RankWriter, error) {
	if err := checkJobID(info.Job); err != nil {
		return nil, err
	}
	if info.Size < 1 || info.Rank < 0 || info.Rank >= info.Size {
		return nil, fmt.Errorf("trace: rank %d of %d: not a rank of the job", info.Rank, info.Size)
	}
	tmp := filepath.Join(dir, tmpName(RankFileName(info.Job, info.Rank)))
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("trace: %w", err)
	}
	w := &RankWriter{info: info, dir: dir, tmp: tmp, f: f, w: bufio.NewWriterSize(f, writeBuffer)}
	w.buf = append(w.buf, fileHead...)
	w.buf = appendMeta(w.buf, &w.info)
	if _, err := w.w.Write(w.buf); err != nil {
		w.Abort()
		return nil, fmt.Errorf("trace: %s: %w", tmp, err)
	}
	return w, nil
}

// Write appends s to the file. Spans come in the order they end, not the
// order they start; readers sort them. A span that could not be a call
// (no name, End before Start, a negative lane) is refused and the file
// stays whole. After a failed write every later one fails too: the
// caller counts them as dropped.
func (w *RankWriter) Write(s Span) error {
	switch {
	case w.done:
		return errClosed
	case w.err != nil:
		return w.err
	case s.Name == "":
		return errors.New("trace: span without a name")
	case s.End < s.Start:
		return fmt.Errorf("trace: span %s ends (%d ns) before it starts (%d ns)", s.Name, s.End, s.Start)
	case s.Lane < 0:
		return fmt.Errorf("trace: span %s on lane %d", s.Name, s.Lane)
	}
	w.buf = append(w.buf[:0], eventSep...)
	w.buf = appendSpan(w.buf, w.info.Rank, &s)
	if _, err := w.w.Write(w.buf); err != nil {
		w.err = fmt.Errorf("trace: %s: %w", w.tmp, err)
		return w.err
	}
	w.spans++
	return nil
}

// Spans returns the number of spans written so far.
func (w *RankWriter) Spans() int64 { return w.spans }

// Close ends the file with the rank's otherData (endNs, dropped, and the
// spans written), flushes it, syncs it to disk and renames it to its final
// name, RankFileName in the writer's directory. A file under that name is
// therefore always whole. On error the temporary file is removed.
func (w *RankWriter) Close(endNs, dropped int64) error {
	if w.done {
		return errClosed
	}
	if w.err != nil {
		w.Abort()
		return w.err
	}
	w.info.EndNs, w.info.Dropped, w.info.Spans = endNs, dropped, w.spans
	w.buf = append(w.buf[:0], fileMiddle...)
	w.buf = appendRankData(w.buf, &w.info)
	w.buf = append(w.buf, fileEnd...)
	final := filepath.Join(w.dir, RankFileName(w.info.Job, w.info.Rank))
	err := w.finish(final)
	w.done = true
	if err != nil {
		os.Remove(w.tmp)
		return fmt.Errorf("trace: %s: %w", final, err)
	}
	return nil
}

// finish writes the tail and puts the file in place.
func (w *RankWriter) finish(final string) error {
	if _, err := w.w.Write(w.buf); err != nil {
		w.f.Close()
		return err
	}
	return commit(w.f, w.w, final)
}

// commit flushes bw to f, syncs and closes f, renames it to final and
// syncs the directory, so that after a crash the final name holds the
// whole file or nothing.
func commit(f *os.File, bw *bufio.Writer, final string) error {
	err := bw.Flush()
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := os.Rename(f.Name(), final); err != nil {
		return err
	}
	// The rename is in place once the directory is synced; a file system
	// that cannot sync a directory has renamed all the same.
	if d, err := os.Open(filepath.Dir(final)); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// Abort closes and removes the temporary file: the rank leaves no trace.
// It does nothing after Close or Abort.
func (w *RankWriter) Abort() {
	if w.done {
		return
	}
	w.done = true
	w.f.Close()
	os.Remove(w.tmp)
}
