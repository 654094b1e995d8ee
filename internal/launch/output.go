package launch

import (
	"bufio"
	"errors"
	"io"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"time"
)

// maxLine is the longest line forwarded in one piece. A longer line is
// forwarded in chunks, which lines of other ranks may then come between.
const maxLine = 64 << 10

// output forwards the ranks' stdout and stderr to the launcher's writers
// one whole line at a time, so lines of different ranks never mix.
type output struct {
	mu     sync.Mutex // one lock for every destination: stdout and stderr may be one terminal
	prefix bool
	log    *slog.Logger
	wg     sync.WaitGroup
	pipes  []*os.File
	broken bool // a destination failed; logged once
}

// pipe returns a pipe whose write end a rank writes to and whose lines go
// to w; the caller closes the write end once the rank has it.
func (o *output) pipe(rank int, w io.Writer) (*os.File, error) {
	r, wr, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	o.pipes = append(o.pipes, r)
	o.wg.Add(1)
	go func() {
		defer o.wg.Done()
		defer r.Close()
		o.copyLines(rank, r, w)
	}()
	return wr, nil
}

// copyLines forwards lines from r to w until r ends. A last line without a
// newline is forwarded too; with prefixes on, it is given one, so the next
// rank's prefix starts a line.
func (o *output) copyLines(rank int, r io.Reader, w io.Writer) {
	br := bufio.NewReaderSize(r, maxLine)
	var pfx []byte
	if o.prefix {
		pfx = []byte("[" + strconv.Itoa(rank) + "] ")
	}
	var buf []byte
	atStart := true
	for {
		chunk, err := br.ReadSlice('\n')
		if len(chunk) > 0 {
			buf = buf[:0]
			if atStart {
				buf = append(buf, pfx...)
			}
			buf = append(buf, chunk...)
			atStart = chunk[len(chunk)-1] == '\n'
			if err != nil && !errors.Is(err, bufio.ErrBufferFull) && !atStart && o.prefix {
				buf = append(buf, '\n')
			}
			o.write(w, buf)
		}
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			return // io.EOF, or the read deadline set by drain
		}
	}
}

func (o *output) write(w io.Writer, b []byte) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, err := w.Write(b); err != nil && !o.broken {
		// Keep draining the rank's pipe, so it never blocks on output
		// nobody reads; say so once.
		o.broken = true
		o.log.Warn("launch: cannot forward rank output", "err", err)
	}
}

// drain waits until every pipe has ended. Pipes end when the ranks and all
// they started have exited; a process that escaped its rank's group may
// hold one open, so after grace the rest is abandoned.
func (o *output) drain(grace time.Duration) {
	done := make(chan struct{})
	go func() {
		o.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return
	case <-time.After(grace):
	}
	for _, p := range o.pipes {
		p.SetReadDeadline(time.Unix(1, 0))
	}
	<-done
	o.log.Warn("launch: a process outside the ranks' groups still held their output; stopped reading it")
}
