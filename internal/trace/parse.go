package trace

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// The kinds of broken file, for errors.Is. Every error says more: the
// file, and where and what is wrong.
var (
	// ErrNotTrace: the file is not a commtune trace (not JSON, not an
	// object, no otherData.format, or another format).
	ErrNotTrace = errors.New("not a commtune trace")
	// ErrCutShort: the file ends before its JSON does, as the file of a
	// rank that did not finish writing does.
	ErrCutShort = errors.New("cut short")
	// ErrVersion: a commtune trace of a version this package does not
	// read.
	ErrVersion = errors.New("unsupported trace version")
	// ErrInvalid: a commtune trace that breaks the format (an event
	// without its fields, spans of a lane overlapping without nesting,
	// otherData that does not match the events...).
	ErrInvalid = errors.New("invalid trace")
)

// absent stands for a number the file did not give: events are decoded
// into one reused value, without a pointer per field.
const absent = math.MinInt64

// maxSize bounds a job's size as a file states it, so that a corrupt
// file cannot make a reader allocate for billions of ranks.
const maxSize = 1 << 24

// eventJSON is one event of traceEvents as decoded.
type eventJSON struct {
	Name string          `json:"name"`
	Cat  string          `json:"cat"`
	Ph   string          `json:"ph"`
	Ts   json.RawMessage `json:"ts"`
	Dur  json.RawMessage `json:"dur"`
	Pid  int64           `json:"pid"`
	Tid  int64           `json:"tid"`
	Args argsJSON        `json:"args"`
}

// argsJSON is an event's args: a span's, or a metadata event's name and
// sort_index.
type argsJSON struct {
	Comm      string `json:"comm"`
	Bytes     int64  `json:"bytes"`
	Peer      int64  `json:"peer"`
	Root      int64  `json:"root"`
	Alg       string `json:"alg"`
	By        string `json:"by"`
	Site      string `json:"site"`
	Error     string `json:"error"`
	Name      string `json:"name"`
	SortIndex int64  `json:"sort_index"`
}

// emptyEvent is the value each event is decoded over.
var emptyEvent = eventJSON{Pid: absent, Tid: absent, Args: argsJSON{Bytes: absent, Peer: absent, Root: absent, SortIndex: absent}}

// headerJSON is what otherData says of itself, whichever the format; raw,
// so that a foreign otherData is told apart by its format before its
// other fields are judged.
type headerJSON struct {
	Format  json.RawMessage `json:"format"`
	Version json.RawMessage `json:"version"`
}

// rankJSON is a rank's otherData: a rank file's, or one of a merged
// file's ranks.
type rankJSON struct {
	Job           *string `json:"job"`
	Rank          *int64  `json:"rank"`
	Size          *int64  `json:"size"`
	Host          string  `json:"host"`
	PID           int64   `json:"pid"`
	ClockOffsetNs int64   `json:"clock_offset_ns"`
	ClockErrorNs  int64   `json:"clock_error_ns"`
	StartNs       *int64  `json:"start_ns"`
	EndNs         *int64  `json:"end_ns"`
	Spans         *int64  `json:"spans"`
	Dropped       int64   `json:"dropped"`
}

// mergedJSON is a merged file's otherData.
type mergedJSON struct {
	Job   *string    `json:"job"`
	Ranks []rankJSON `json:"ranks"`
}

// content is a file as parsed: its otherData and its spans by pid.
type content struct {
	format    string
	job       string
	ranks     []RankInfo      // sorted by rank
	spans     map[int][]Span  // by pid, in file order
	hasEvents bool            // traceEvents was there
	eventErr  error           // the first event that breaks the format
	other     json.RawMessage // otherData, undecoded until the events are read
	strings   map[string]string
}

// intern returns s, or an equal string read before: a trace repeats a
// few names, categories and call sites a million times.
func (c *content) intern(s string) string {
	if s == "" {
		return ""
	}
	if t, ok := c.strings[s]; ok {
		return t
	}
	if len(c.strings) < 1<<16 {
		c.strings[s] = s
	}
	return s
}

// parse reads one file's JSON from r, size bytes long, and checks it
// against the format.
func parse(r io.Reader, size int64) (*content, error) {
	c := &content{spans: map[int][]Span{}, strings: map[string]string{}}
	dec := json.NewDecoder(r)
	fail := func(err error) error { return decodeError(err, dec, size) }
	tok, err := dec.Token()
	if err == io.EOF {
		return nil, fmt.Errorf("%w: an empty file", ErrCutShort)
	}
	if err != nil {
		return nil, fail(err)
	}
	if tok != json.Delim('{') {
		return nil, fmt.Errorf("%w: not a JSON object", ErrNotTrace)
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fail(err)
		}
		switch key, _ := tok.(string); key {
		case "traceEvents":
			if c.hasEvents {
				return nil, fmt.Errorf("%w: traceEvents twice", ErrInvalid)
			}
			c.hasEvents = true
			if err := c.readEvents(dec, size); err != nil {
				return nil, err
			}
		case "otherData":
			if c.other != nil {
				return nil, fmt.Errorf("%w: otherData twice", ErrInvalid)
			}
			if err := dec.Decode(&c.other); err != nil {
				return nil, fail(err)
			}
		default:
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return nil, fail(err)
			}
		}
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return nil, fail(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		if err != nil {
			return nil, fail(err)
		}
		return nil, fmt.Errorf("%w: more JSON after the trace object (at byte %d)", ErrInvalid, dec.InputOffset())
	}
	if err := c.readOther(); err != nil {
		return nil, err
	}
	if !c.hasEvents {
		return nil, fmt.Errorf("%w: no traceEvents", ErrInvalid)
	}
	if c.eventErr != nil {
		return nil, c.eventErr
	}
	if err := c.check(); err != nil {
		return nil, err
	}
	return c, nil
}

// decodeError describes a decoding error: the end of the input where
// the JSON goes on is a file cut short, anything else is not JSON.
func decodeError(err error, dec *json.Decoder, size int64) error {
	var syn *json.SyntaxError
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return fmt.Errorf("%w: unexpected end of JSON input at byte %d", ErrCutShort, size)
	case errors.As(err, &syn):
		return fmt.Errorf("%w: not valid JSON at byte %d: %v", ErrNotTrace, dec.InputOffset(), err)
	}
	return fmt.Errorf("%w: %v", ErrNotTrace, err)
}

// fatal reports whether a decoding error leaves the decoder unable to go
// on: the input is not JSON or ends early. Others (a value of the wrong
// type) come after the decoder has read the whole value.
func fatal(err error) bool {
	var syn *json.SyntaxError
	return errors.As(err, &syn) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

// readEvents reads the traceEvents array. An event that breaks the format
// is remembered, not returned at once: if otherData then says the file is
// not a commtune trace at all, that is the error to report.
func (c *content) readEvents(dec *json.Decoder, size int64) error {
	tok, err := dec.Token()
	if err != nil {
		return decodeError(err, dec, size)
	}
	if tok != json.Delim('[') {
		return fmt.Errorf("%w: traceEvents is not an array", ErrNotTrace)
	}
	var ev eventJSON
	for i := 0; dec.More(); i++ {
		ev = emptyEvent
		err := dec.Decode(&ev)
		if err != nil && !fatal(err) {
			// The decoder has read the whole value: go on to the next.
			if c.eventErr == nil {
				c.eventErr = fmt.Errorf("%w: traceEvents[%d]: %s", ErrInvalid, i, otherError(err))
			}
			continue
		}
		if err != nil {
			return decodeError(err, dec, size)
		}
		if err := c.addEvent(&ev); err != nil && c.eventErr == nil {
			c.eventErr = fmt.Errorf("%w: traceEvents[%d]%s: %v", ErrInvalid, i, eventName(&ev), err)
		}
	}
	if _, err := dec.Token(); err != nil { // the closing bracket
		return decodeError(err, dec, size)
	}
	return nil
}

// typeError says what a type error means in the file's terms.
func typeError(e *json.UnmarshalTypeError) string {
	field := e.Field
	if field == "" {
		return fmt.Sprintf("%s where an object belongs", e.Value)
	}
	want := "a string"
	switch {
	case e.Type.Kind() == reflect.Int64:
		want = "an integer"
	case e.Type.Kind() == reflect.Struct:
		want = "an object"
	case e.Type.Kind() == reflect.Slice:
		want = "an array"
	}
	return fmt.Sprintf("%s: %s where %s belongs", field, e.Value, want)
}

// eventName names an event in an error: " (Allreduce)".
func eventName(ev *eventJSON) string {
	if ev.Name == "" {
		return ""
	}
	return fmt.Sprintf(" (%.40q)", ev.Name)
}

// addEvent checks one event and keeps it if it is a span.
func (c *content) addEvent(ev *eventJSON) error {
	switch {
	case ev.Name == "":
		return errors.New("no name")
	case ev.Ph == "":
		return errors.New("no ph")
	case ev.Ph != "X" && ev.Ph != "M":
		return fmt.Errorf("ph %q: a commtune trace holds complete events (X) and metadata (M) only", ev.Ph)
	case ev.Pid == absent:
		return errors.New("no pid")
	case ev.Pid < 0 || ev.Pid >= maxSize:
		return fmt.Errorf("pid %d: not a rank", ev.Pid)
	case ev.Tid == absent:
		return errors.New("no tid")
	case ev.Tid < 0 || ev.Tid > math.MaxInt32:
		return fmt.Errorf("tid %d: not a lane", ev.Tid)
	}
	if ev.Ph == "M" {
		return checkMeta(ev)
	}
	s := Span{Name: c.intern(ev.Name), Cat: c.intern(ev.Cat), Lane: int(ev.Tid), Bytes: -1, Peer: None, Root: None}
	var err error
	if isNull(ev.Ts) {
		return errors.New("no ts")
	}
	if s.Start, err = parseMicros(ev.Ts); err != nil {
		return fmt.Errorf("ts: %v", err)
	}
	if isNull(ev.Dur) {
		return errors.New("no dur")
	}
	dur, err := parseMicros(ev.Dur)
	switch {
	case err != nil:
		return fmt.Errorf("dur: %v", err)
	case dur < 0:
		return fmt.Errorf("dur %s: negative", ev.Dur)
	case s.Start > math.MaxInt64-dur:
		return fmt.Errorf("ts %s + dur %s: out of range", ev.Ts, ev.Dur)
	}
	s.End = s.Start + dur
	a := &ev.Args
	switch {
	case a.Bytes != absent && a.Bytes < 0:
		return fmt.Errorf("args.bytes %d: negative", a.Bytes)
	case a.Peer != absent && (a.Peer < AnySource || a.Peer >= maxSize):
		return fmt.Errorf("args.peer %d: not a rank nor -1 (any source)", a.Peer)
	case a.Root != absent && (a.Root < 0 || a.Root >= maxSize):
		return fmt.Errorf("args.root %d: not a rank", a.Root)
	}
	if a.Bytes != absent {
		s.Bytes = a.Bytes
	}
	if a.Peer != absent {
		s.Peer = int(a.Peer)
	}
	if a.Root != absent {
		s.Root = int(a.Root)
	}
	s.Comm, s.Alg, s.By, s.Site = c.intern(a.Comm), c.intern(a.Alg), c.intern(a.By), c.intern(a.Site)
	s.Err = a.Error
	pid := int(ev.Pid)
	c.spans[pid] = append(c.spans[pid], s)
	return nil
}

// checkMeta checks the metadata events commtune writes; others (a
// thread's name...) are let through for the viewers.
func checkMeta(ev *eventJSON) error {
	switch ev.Name {
	case "process_name":
		if ev.Args.Name == "" {
			return errors.New("process_name without args.name")
		}
	case "process_sort_index":
		if ev.Args.SortIndex == absent {
			return errors.New("process_sort_index without args.sort_index")
		}
	}
	return nil
}

// isNull reports whether a raw value is absent or null.
func isNull(raw json.RawMessage) bool { return len(raw) == 0 || string(raw) == "null" }

// parseMicros converts a JSON number of microseconds to nanoseconds. The
// three decimals commtune writes are read exactly; other spellings (more
// decimals, an exponent) through a float, rounded to the nanosecond.
func parseMicros(raw []byte) (int64, error) {
	s := string(raw)
	if s == "" || s[0] != '-' && (s[0] < '0' || s[0] > '9') {
		return 0, fmt.Errorf("%.40s: not a number", s)
	}
	neg := strings.HasPrefix(s, "-")
	ip, frac, dot := strings.Cut(strings.TrimPrefix(s, "-"), ".")
	if len(ip) > 0 && len(ip) <= 15 && digits(ip) && len(frac) <= 3 && digits(frac) && (!dot || frac != "") {
		var v int64
		for _, d := range ip {
			v = v*10 + int64(d-'0')
		}
		for i := range 3 {
			v *= 10
			if i < len(frac) {
				v += int64(frac[i] - '0')
			}
		}
		if neg {
			v = -v
		}
		return v, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, fmt.Errorf("%.40s: not a number", s)
	}
	ns := math.Round(f * 1000)
	if !(ns > -9e18 && ns < 9e18) {
		return 0, fmt.Errorf("%.40s µs: out of range", s)
	}
	return int64(ns), nil
}

// digits reports whether s is made of decimal digits only.
func digits(s string) bool {
	for i := range len(s) {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// readOther decodes otherData: what the file is, and its ranks.
func (c *content) readOther() error {
	if c.other == nil {
		return fmt.Errorf("%w: no otherData", ErrNotTrace)
	}
	var h headerJSON
	if err := json.Unmarshal(c.other, &h); err != nil {
		return fmt.Errorf("%w: otherData: %v", ErrNotTrace, otherError(err))
	}
	var format string
	var version int64
	switch {
	case isNull(h.Format):
		return fmt.Errorf("%w: no otherData.format", ErrNotTrace)
	case json.Unmarshal(h.Format, &format) != nil:
		return fmt.Errorf("%w: otherData.format is %.60s, not a string", ErrNotTrace, h.Format)
	case format != FormatRank && format != FormatMerged:
		return fmt.Errorf("%w: otherData.format is %.60q, not %q or %q", ErrNotTrace, format, FormatRank, FormatMerged)
	case isNull(h.Version):
		return fmt.Errorf("%w: no otherData.version", ErrInvalid)
	case json.Unmarshal(h.Version, &version) != nil:
		return fmt.Errorf("%w: otherData.version is %.60s, not an integer", ErrInvalid, h.Version)
	case version != Version:
		return fmt.Errorf("%w: version %d: this commtune reads version %d", ErrVersion, version, Version)
	}
	c.format = format
	if c.format == FormatRank {
		var r rankJSON
		if err := json.Unmarshal(c.other, &r); err != nil {
			return fmt.Errorf("%w: otherData: %v", ErrInvalid, otherError(err))
		}
		info, err := r.info("otherData")
		if err != nil {
			return err
		}
		c.job, c.ranks = info.Job, []RankInfo{info}
		return nil
	}
	var m mergedJSON
	if err := json.Unmarshal(c.other, &m); err != nil {
		return fmt.Errorf("%w: otherData: %v", ErrInvalid, otherError(err))
	}
	if m.Job == nil || *m.Job == "" {
		return fmt.Errorf("%w: otherData: no job", ErrInvalid)
	}
	if len(m.Ranks) == 0 {
		return fmt.Errorf("%w: otherData: no ranks", ErrInvalid)
	}
	c.job = *m.Job
	for i, r := range m.Ranks {
		info, err := r.info(fmt.Sprintf("otherData.ranks[%d]", i))
		if err != nil {
			return err
		}
		if info.Job != c.job {
			return fmt.Errorf("%w: otherData.ranks[%d]: rank %d of job %.60q in the merged file of job %.60q", ErrInvalid, i, info.Rank, info.Job, c.job)
		}
		if len(c.ranks) > 0 && info.Size != c.ranks[0].Size {
			return fmt.Errorf("%w: otherData.ranks[%d]: rank %d says the job has %d ranks, rank %d says %d", ErrInvalid, i, info.Rank, info.Size, c.ranks[0].Rank, c.ranks[0].Size)
		}
		c.ranks = append(c.ranks, info)
	}
	slices.SortFunc(c.ranks, func(a, b RankInfo) int { return a.Rank - b.Rank })
	for i := 1; i < len(c.ranks); i++ {
		if c.ranks[i].Rank == c.ranks[i-1].Rank {
			return fmt.Errorf("%w: rank %d twice in otherData.ranks", ErrInvalid, c.ranks[i].Rank)
		}
	}
	return nil
}

// otherError shortens a decoding error of an event or of otherData.
func otherError(err error) string {
	var typ *json.UnmarshalTypeError
	if errors.As(err, &typ) {
		return typeError(typ)
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}

// info checks a rank's otherData, where names it in an error.
func (r *rankJSON) info(where string) (RankInfo, error) {
	bad := func(format string, args ...any) (RankInfo, error) {
		return RankInfo{}, fmt.Errorf("%w: %s: %s", ErrInvalid, where, fmt.Sprintf(format, args...))
	}
	for _, f := range []struct {
		name string
		v    any
	}{{"job", r.Job}, {"rank", r.Rank}, {"size", r.Size}, {"start_ns", r.StartNs}, {"end_ns", r.EndNs}, {"spans", r.Spans}} {
		switch v := f.v.(type) {
		case *string:
			if v == nil || *v == "" {
				return bad("no %s", f.name)
			}
		case *int64:
			if v == nil {
				return bad("no %s", f.name)
			}
		}
	}
	switch {
	case *r.Size < 1 || *r.Size > maxSize:
		return bad("size %d: not a number of ranks", *r.Size)
	case *r.Rank < 0 || *r.Rank >= *r.Size:
		return bad("rank %d: not a rank of a job of %d", *r.Rank, *r.Size)
	case *r.EndNs < *r.StartNs:
		return bad("end_ns %d before start_ns %d", *r.EndNs, *r.StartNs)
	case *r.Spans < 0:
		return bad("spans %d: negative", *r.Spans)
	case r.Dropped < 0:
		return bad("dropped %d: negative", r.Dropped)
	case r.PID < 0 || r.PID > math.MaxInt32:
		return bad("pid %d: not a process id", r.PID)
	}
	return RankInfo{
		Job: *r.Job, Rank: int(*r.Rank), Size: int(*r.Size), Host: r.Host, PID: int(r.PID),
		ClockOffsetNs: r.ClockOffsetNs, ClockErrorNs: r.ClockErrorNs,
		StartNs: *r.StartNs, EndNs: *r.EndNs, Spans: *r.Spans, Dropped: r.Dropped,
	}, nil
}
