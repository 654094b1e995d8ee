package trace

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// RankWriter writes one rank's file as its spans end. It is not safe for
// concurrent use: the caller serializes its spans.
//
// A write the file system refuses (a full disk) loses the spans buffered
// since the last write that succeeded, not the file: the writer cuts the
// file back to its last whole event, counts the lost spans as dropped and
// goes on, so that the file a rank leaves still reads.
type RankWriter struct {
	info    RankInfo
	dir     string
	f       file
	buf     []byte // events not yet written, whole ones
	pending int64  // spans in buf
	off     int64  // bytes of the file written whole
	spans   int64  // spans in the file and buf
	lost    int64  // spans lost to refused writes
	broken  error  // the file could not be cut back: it is lost
	done    bool   // closed or aborted
}

// file is what a RankWriter needs of its file; tests stand in a file
// system that refuses writes.
type file interface {
	WriteAt(b []byte, off int64) (int, error)
	Truncate(size int64) error
	Sync() error
	Close() error
	Name() string
}

// writeBuffer is how much a writer gathers before writing: a busy rank
// writes to the file system every few thousand spans, not every span.
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
	w := &RankWriter{info: info, dir: dir, f: f, buf: make([]byte, 0, writeBuffer+4096)}
	w.buf = append(w.buf, fileHead...)
	w.buf = appendMeta(w.buf, &w.info)
	if err := w.flush(); err != nil {
		w.Abort()
		return nil, err
	}
	return w, nil
}

// Write appends s to the file. Spans come in the order they end, not the
// order they start; readers sort them. A span that could not be a call
// (no name, End before Start, a negative lane) is refused and the file
// stays whole.
//
// An error from the file system means that s and the spans written
// since the last write that succeeded are lost; the writer counts them in
// the file's dropped (see Close) and the caller should not count them
// again. Later writes are tried anew.
func (w *RankWriter) Write(s Span) error {
	switch {
	case w.done:
		return errClosed
	case w.broken != nil:
		w.lost++
		return w.broken
	case s.Name == "":
		return errors.New("trace: span without a name")
	case s.End < s.Start:
		return fmt.Errorf("trace: span %s ends (%d ns) before it starts (%d ns)", s.Name, s.End, s.Start)
	case s.Lane < 0:
		return fmt.Errorf("trace: span %s on lane %d", s.Name, s.Lane)
	}
	w.buf = append(w.buf, eventSep...)
	w.buf = appendSpan(w.buf, w.info.Rank, &s)
	w.pending++
	w.spans++
	if len(w.buf) < writeBuffer {
		return nil
	}
	return w.flush()
}

// flush writes the buffered events. When the file system refuses them,
// it cuts the file back to the events written before and counts the
// buffered spans as lost.
func (w *RankWriter) flush() error {
	n, err := w.f.WriteAt(w.buf, w.off)
	if err == nil {
		w.off += int64(n)
		w.buf, w.pending = w.buf[:0], 0
		return nil
	}
	lost := w.pending
	w.lost += lost
	w.spans -= lost
	w.buf, w.pending = w.buf[:0], 0
	if terr := w.f.Truncate(w.off); terr != nil {
		w.broken = fmt.Errorf("trace: %s: %w (and cutting back the file: %v)", w.f.Name(), err, terr)
		return w.broken
	}
	return fmt.Errorf("trace: %s: %w (%d spans lost, counted as dropped)", w.f.Name(), err, lost)
}

// Spans returns the number of spans the file holds so far, the buffered
// ones included and the lost ones not.
func (w *RankWriter) Spans() int64 { return w.spans }

// Close ends the file with the rank's otherData, flushes it, syncs it to
// disk and renames it to its final name, RankFileName in the writer's
// directory; a file under that name is therefore always whole. otherData
// gives endNs; spans, the spans the file holds; and dropped, the caller's
// dropped (spans it did not hand to Write) plus those the writer lost to
// refused writes. On error the temporary file is removed.
func (w *RankWriter) Close(endNs, dropped int64) error {
	if w.done {
		return errClosed
	}
	if w.broken != nil {
		w.Abort()
		return w.broken
	}
	if len(w.buf) > 0 {
		w.flush() // a refusal is counted in w.lost and told in otherData
		if w.broken != nil {
			w.Abort()
			return w.broken
		}
	}
	w.info.EndNs, w.info.Dropped, w.info.Spans = endNs, dropped+w.lost, w.spans
	w.buf = append(w.buf, fileMiddle...)
	w.buf = appendRankData(w.buf, &w.info)
	w.buf = append(w.buf, fileEnd...)
	final := filepath.Join(w.dir, RankFileName(w.info.Job, w.info.Rank))
	_, err := w.f.WriteAt(w.buf, w.off)
	if err == nil {
		err = install(w.f, final)
	} else {
		w.f.Close()
	}
	w.done = true
	if err != nil {
		os.Remove(w.f.Name())
		return fmt.Errorf("trace: %s: %w", final, err)
	}
	return nil
}

// install syncs and closes f, renames it to final and syncs the
// directory, so that after a crash the final name holds the whole file or
// nothing.
func install(f file, final string) error {
	err := f.Sync()
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
	os.Remove(w.f.Name())
}
