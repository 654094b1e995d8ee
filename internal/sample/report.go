package sample

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"

	"github.com/commtune/commtune/internal/profile"
)

// Report is one line rank 0 writes on its standard output for the command
// that started the pass: progress as it goes, then the result.
type Report struct {
	Done      int                `json:"done,omitempty"`
	Total     int                `json:"total,omitempty"`
	What      string             `json:"what,omitempty"`
	Transport string             `json:"transport,omitempty"`
	Result    *profile.Transport `json:"result,omitempty"`
	// Node is a node pass's result (NodeRun): its curves by path.
	Node map[string]profile.Curve `json:"node,omitempty"`
	// Coll is the same job's collective table (TableRun).
	Coll profile.CollTable `json:"coll,omitempty"`
	// Slow is set, to LaunchRatio's figure, when a node pass found its
	// launch slow (SlowLaunchRatio) and kept nothing.
	Slow float64 `json:"slow,omitempty"`
}

// WriteReport writes r as one JSON line.
func WriteReport(w io.Writer, r Report) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// ReportReader is an io.Writer that decodes the lines rank 0 writes and
// hands each report to a callback: give it to the launcher as the ranks'
// standard output.
type ReportReader struct {
	pw   *io.PipeWriter
	done chan error
}

// NewReportReader returns a reader calling fn for each report, in order.
func NewReportReader(fn func(Report)) *ReportReader {
	pr, pw := io.Pipe()
	rr := &ReportReader{pw: pw, done: make(chan error, 1)}
	go func() {
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 16<<20) // a result line holds every curve
		var err error
		for sc.Scan() {
			var r Report
			if e := json.Unmarshal(sc.Bytes(), &r); e != nil {
				if err == nil {
					err = fmt.Errorf("sample: unreadable report %.80q: %v", sc.Text(), e)
				}
				continue
			}
			fn(r)
		}
		if err == nil {
			err = sc.Err()
		}
		pr.CloseWithError(err)
		rr.done <- err
	}()
	return rr
}

// Write feeds the ranks' output.
func (rr *ReportReader) Write(p []byte) (int, error) { return rr.pw.Write(p) }

// Close ends the stream and returns the first decoding error.
func (rr *ReportReader) Close() error {
	rr.pw.Close()
	return <-rr.done
}
