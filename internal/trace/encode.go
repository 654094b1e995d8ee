package trace

import (
	"strconv"
	"unicode/utf8"
)

// The encoder appends JSON to a byte slice by hand: a rank may write a
// million spans, and a map or reflection per span would cost more than
// the call it records.

// appendMicros appends ns as microseconds with exactly three decimals,
// from the integer: no float rounding, so every nanosecond survives.
func appendMicros(b []byte, ns int64) []byte {
	u := uint64(ns)
	if ns < 0 {
		b = append(b, '-')
		u = -u // two's complement: right for math.MinInt64 too
	}
	b = strconv.AppendUint(b, u/1000, 10)
	f := u % 1000
	return append(b, '.', byte('0'+f/100), byte('0'+f/10%10), byte('0'+f%10))
}

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string. Call sites and error messages
// may hold any bytes: control characters are escaped, invalid UTF-8
// becomes U+FFFD, and U+2028 and U+2029 are escaped for JavaScript
// viewers, as encoding/json does.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// appendKey appends ,"key": (or "key": first in an object).
func appendKey(b []byte, first bool, key string) []byte {
	if !first {
		b = append(b, ',')
	}
	b = append(b, '"')
	b = append(b, key...)
	return append(b, '"', ':')
}

// appendSpan appends s of rank pid as a complete ("X") event.
func appendSpan(b []byte, pid int, s *Span) []byte {
	b = append(b, `{"name":`...)
	b = appendString(b, s.Name)
	if s.Cat != "" {
		b = append(b, `,"cat":`...)
		b = appendString(b, s.Cat)
	}
	b = append(b, `,"ph":"X","ts":`...)
	b = appendMicros(b, s.Start)
	b = append(b, `,"dur":`...)
	b = appendMicros(b, s.End-s.Start)
	b = append(b, `,"pid":`...)
	b = strconv.AppendInt(b, int64(pid), 10)
	b = append(b, `,"tid":`...)
	b = strconv.AppendInt(b, int64(s.Lane), 10)
	if hasArgs(s) {
		b = append(b, `,"args":{`...)
		first := true
		str := func(key, v string) {
			if v != "" {
				b = appendKey(b, first, key)
				b = appendString(b, v)
				first = false
			}
		}
		num := func(key string, v int64, present bool) {
			if present {
				b = appendKey(b, first, key)
				b = strconv.AppendInt(b, v, 10)
				first = false
			}
		}
		str("comm", s.Comm)
		num("bytes", s.Bytes, s.Bytes >= 0)
		num("peer", int64(s.Peer), s.Peer != None)
		num("root", int64(s.Root), s.Root != None)
		str("alg", s.Alg)
		str("by", s.By)
		str("site", s.Site)
		str("error", s.Err)
		b = append(b, '}')
	}
	return append(b, '}')
}

// hasArgs reports whether s has any argument to write.
func hasArgs(s *Span) bool {
	return s.Comm != "" || s.Bytes >= 0 || s.Peer != None || s.Root != None ||
		s.Alg != "" || s.By != "" || s.Site != "" || s.Err != ""
}

// appendMeta appends rank's two metadata events: its name in the viewers'
// process list, and its place in that list (by rank, not by pid order of
// appearance).
func appendMeta(b []byte, info *RankInfo) []byte {
	name := "rank " + strconv.Itoa(info.Rank)
	if info.Host != "" {
		name += " (" + info.Host + ")"
	}
	b = append(b, `{"name":"process_name","ph":"M","pid":`...)
	b = strconv.AppendInt(b, int64(info.Rank), 10)
	b = append(b, `,"tid":0,"args":{"name":`...)
	b = appendString(b, name)
	b = append(b, `}},`+"\n"+`{"name":"process_sort_index","ph":"M","pid":`...)
	b = strconv.AppendInt(b, int64(info.Rank), 10)
	b = append(b, `,"tid":0,"args":{"sort_index":`...)
	b = strconv.AppendInt(b, int64(info.Rank), 10)
	return append(b, `}}`...)
}

// appendRankData appends a rank's otherData object.
func appendRankData(b []byte, info *RankInfo) []byte {
	b = append(b, `{"format":"`+FormatRank+`","version":`...)
	b = strconv.AppendInt(b, Version, 10)
	b = append(b, `,"job":`...)
	b = appendString(b, info.Job)
	for _, f := range []struct {
		key string
		v   int64
	}{{"rank", int64(info.Rank)}, {"size", int64(info.Size)}} {
		b = appendKey(b, false, f.key)
		b = strconv.AppendInt(b, f.v, 10)
	}
	b = append(b, `,"host":`...)
	b = appendString(b, info.Host)
	for _, f := range []struct {
		key string
		v   int64
	}{
		{"pid", int64(info.PID)},
		{"clock_offset_ns", info.ClockOffsetNs}, {"clock_error_ns", info.ClockErrorNs},
		{"start_ns", info.StartNs}, {"end_ns", info.EndNs},
		{"spans", info.Spans}, {"dropped", info.Dropped},
	} {
		b = appendKey(b, false, f.key)
		b = strconv.AppendInt(b, f.v, 10)
	}
	return append(b, '}')
}

// Between the events and after them: the array's end and the file's
// other keys, the otherData object following.
const (
	fileHead   = "{\"traceEvents\":[\n"
	eventSep   = ",\n"
	fileMiddle = "\n],\n\"displayTimeUnit\":\"ns\",\n\"otherData\":"
	fileEnd    = "}\n"
)
