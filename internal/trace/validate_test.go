package trace

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// doc assembles a trace file from its events and otherData.
func doc(other string, events ...string) string {
	return `{"traceEvents":[` + strings.Join(events, ",\n") + `],"displayTimeUnit":"ns","otherData":` + other + `}`
}

// rankOther is the otherData of rank 0 of 2 holding spans spans.
func rankOther(spans int) string {
	return fmt.Sprintf(`{"format":"commtune-trace","version":1,"job":"j","rank":0,"size":2,"start_ns":0,"end_ns":100000,"spans":%d}`, spans)
}

// ev is a span of rank 0 on lane tid from ts for dur (µs), with extra
// fields appended.
func ev(name, ts, dur string, tid int, extra string) string {
	return fmt.Sprintf(`{"name":%q,"cat":"coll","ph":"X","ts":%s,"dur":%s,"pid":0,"tid":%d%s}`, name, ts, dur, tid, extra)
}

const meta = `{"name":"process_name","ph":"M","pid":0,"tid":0,"args":{"name":"rank 0"}}`

// mergedOther is a merged file's otherData with the given ranks' objects.
func mergedOther(ranks ...string) string {
	return `{"format":"commtune-trace-merged","version":1,"job":"j","ranks":[` + strings.Join(ranks, ",") + `]}`
}

func rankObj(rank, size, spans int) string {
	return fmt.Sprintf(`{"job":"j","rank":%d,"size":%d,"start_ns":0,"end_ns":10,"spans":%d}`, rank, size, spans)
}

func TestValidate(t *testing.T) {
	a := ev("Allreduce", "1.000", "5.000", 0, "")
	tests := []struct {
		name string
		data string
		kind error  // nil: valid
		msg  string // in the error
	}{
		{"rank file", doc(rankOther(2), meta, a, ev("Send", "2.000", "1.000", 0, `,"args":{"peer":-1,"bytes":3,"site":"x"}`)), nil, ""},
		{"no events", doc(rankOther(0)), nil, ""},
		{"touching spans", doc(rankOther(2), a, ev("Send", "6.000", "1.000", 0, "")), nil, ""},
		{"same span twice (nested)", doc(rankOther(2), a, a), nil, ""},
		{"overlap on two lanes", doc(rankOther(2), a, ev("Send", "3.000", "9.000", 1, "")), nil, ""},
		{"merged file", doc(mergedOther(rankObj(1, 2, 1), rankObj(0, 2, 1)), a, strings.Replace(a, `"pid":0`, `"pid":1`, 1)), nil, ""},
		{"unknown keys and metadata", doc(rankOther(1), `{"name":"thread_name","ph":"M","pid":0,"tid":3,"args":{"name":"x"}}`,
			ev("Send", "1", "2", 0, `,"args":{"future":[1,2]},"id":7`)), nil, ""},

		{"empty", "", ErrCutShort, "empty file"},
		{"cut short", doc(rankOther(1), a)[:40], ErrCutShort, "unexpected end of JSON input at byte 40"},
		{"cut before otherData ends", doc(rankOther(1), a)[:len(doc(rankOther(1), a))-3], ErrCutShort, "unexpected end"},
		{"not JSON", "hello", ErrNotTrace, "not valid JSON"},
		{"an array", `[{"name":"x"}]`, ErrNotTrace, "not a JSON object"},
		{"no otherData", `{"traceEvents":[]}`, ErrNotTrace, "no otherData"},
		{"foreign otherData", `{"traceEvents":[{"ph":"B"}],"otherData":{"version":"x"}}`, ErrNotTrace, "no otherData.format"},
		{"another format", doc(`{"format":"chrome","version":1}`), ErrNotTrace, `otherData.format is "chrome"`},
		{"events not an array", `{"traceEvents":{},"otherData":{}}`, ErrNotTrace, "traceEvents is not an array"},
		{"version 2", doc(strings.Replace(rankOther(0), `"version":1`, `"version":2`, 1)), ErrVersion, "version 2: this commtune reads version 1"},
		{"no version", doc(strings.Replace(rankOther(0), `"version":1,`, ``, 1)), ErrInvalid, "no otherData.version"},
		{"no traceEvents", `{"otherData":` + rankOther(0) + `}`, ErrInvalid, "no traceEvents"},
		{"more JSON after", doc(rankOther(0)) + "{}", ErrInvalid, "more JSON after"},

		{"no name", doc(rankOther(1), `{"ph":"X","ts":1,"dur":1,"pid":0,"tid":0}`), ErrInvalid, "traceEvents[0]: no name"},
		{"no ph", doc(rankOther(1), `{"name":"a","ts":1,"dur":1,"pid":0,"tid":0}`), ErrInvalid, "no ph"},
		{"ph B", doc(rankOther(1), `{"name":"a","ph":"B","ts":1,"pid":0,"tid":0}`), ErrInvalid, `ph "B"`},
		{"no pid", doc(rankOther(1), `{"name":"a","ph":"X","ts":1,"dur":1,"tid":0}`), ErrInvalid, "no pid"},
		{"no tid", doc(rankOther(1), `{"name":"a","ph":"X","ts":1,"dur":1,"pid":0}`), ErrInvalid, "no tid"},
		{"negative tid", doc(rankOther(1), ev("a", "1", "1", -1, "")), ErrInvalid, "tid -1"},
		{"no ts", doc(rankOther(1), `{"name":"a","ph":"X","dur":1,"pid":0,"tid":0}`), ErrInvalid, "no ts"},
		{"no dur", doc(rankOther(1), `{"name":"a","ph":"X","ts":1,"pid":0,"tid":0}`), ErrInvalid, "no dur"},
		{"negative dur", doc(rankOther(1), ev("a", "1", "-0.001", 0, "")), ErrInvalid, "dur -0.001: negative"},
		{"ts a string", doc(rankOther(1), ev("a", `"soon"`, "1", 0, "")), ErrInvalid, "traceEvents[0]"},
		{"pid a string", doc(rankOther(1), `{"name":"a","ph":"X","ts":1,"dur":1,"pid":"0","tid":0}`), ErrInvalid, "pid: string where an integer belongs"},
		{"bytes a string", doc(rankOther(1), ev("a", "1", "1", 0, `,"args":{"bytes":"8"}`)), ErrInvalid, "args.bytes: string where an integer belongs"},
		{"negative bytes", doc(rankOther(1), ev("a", "1", "1", 0, `,"args":{"bytes":-8}`)), ErrInvalid, "args.bytes -8"},
		{"peer -2", doc(rankOther(1), ev("a", "1", "1", 0, `,"args":{"peer":-2}`)), ErrInvalid, "args.peer -2"},
		{"site a number", doc(rankOther(1), ev("a", "1", "1", 0, `,"args":{"site":5}`)), ErrInvalid, "args.site: number where a string belongs"},
		{"args an array", doc(rankOther(1), ev("a", "1", "1", 0, `,"args":[]`)), ErrInvalid, "args: array where an object belongs"},
		{"event not an object", doc(rankOther(1), `7`), ErrInvalid, "traceEvents[0]: number where an object belongs"},
		{"metadata without name", doc(rankOther(0), `{"name":"process_name","ph":"M","pid":0,"tid":0}`), ErrInvalid, "process_name without args.name"},

		{"partial overlap", doc(rankOther(2), a, ev("Send", "3.000", "9.000", 0, "")), ErrInvalid,
			"rank 0 lane 0: Allreduce [1.000, 6.000 µs] and Send [3.000, 12.000 µs] overlap without nesting"},
		{"pid outside the rank", doc(rankOther(1), strings.Replace(a, `"pid":0`, `"pid":1`, 1)), ErrInvalid, "spans of pid 1 in the file of rank 0"},
		{"pid outside the job", doc(mergedOther(rankObj(0, 2, 1)), strings.Replace(a, `"pid":0`, `"pid":5`, 1)), ErrInvalid, "spans of pid 5"},
		{"more spans than said", doc(rankOther(0), a), ErrInvalid, "otherData says 0 spans, the file holds 1"},
		{"fewer spans than said", doc(rankOther(3), a), ErrInvalid, "otherData says 3 spans, the file holds 1"},
		{"rank beyond size", doc(strings.Replace(rankOther(0), `"rank":0`, `"rank":2`, 1)), ErrInvalid, "rank 2: not a rank of a job of 2"},
		{"no size", doc(strings.Replace(rankOther(0), `"size":2,`, ``, 1)), ErrInvalid, "otherData: no size"},
		{"end before start", doc(strings.Replace(rankOther(0), `"end_ns":100000`, `"end_ns":-1`, 1)), ErrInvalid, "end_ns -1 before start_ns 0"},
		{"rank twice", doc(mergedOther(rankObj(0, 2, 0), rankObj(0, 2, 0))), ErrInvalid, "rank 0 twice"},
		{"sizes differ", doc(mergedOther(rankObj(0, 2, 0), rankObj(1, 3, 0))), ErrInvalid, "rank 1 says the job has 3 ranks"},
		{"another job's rank", doc(mergedOther(strings.Replace(rankObj(0, 2, 0), `"j"`, `"k"`, 1))), ErrInvalid, `rank 0 of job "k"`},
		{"merged without ranks", doc(mergedOther()), ErrInvalid, "no ranks"},
		{"otherData not an object", doc(`[1]`), ErrNotTrace, "otherData"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := Validate([]byte(tc.data))
			switch {
			case tc.kind == nil && err != nil:
				t.Fatalf("Validate: %v", err)
			case tc.kind == nil:
				return
			case err == nil:
				t.Fatalf("Validate accepted\n%s", tc.data)
			case !errors.Is(err, tc.kind) || !strings.Contains(err.Error(), tc.msg):
				t.Fatalf("Validate: %v\nwant %v with %q", err, tc.kind, tc.msg)
			}
		})
	}
}
