package boot

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"runtime/metrics"
	"testing"

	"github.com/commtune/commtune/internal/fuzzseed"
)

// Fuzz targets for the PMIx decoders: whatever a server sends, they must
// not panic, must not allocate more than the input warrants, and must
// report only facts that hold. Each is seeded in code with every reply of
// the captures in testdata/pmix, and from testdata/fuzz/<target> (see
// TestPMIxFuzzSeeds).

// pmixEnc is the encoding a fuzz input names.
func pmixEnc(v3 bool) pmixEncoding {
	if v3 {
		return pmixV3
	}
	return pmixV4
}

// pmixCapture is what the fuzz seeds take from one capture.
type pmixCapture struct {
	name    string
	enc     pmixEncoding
	nspace  string
	rank    uint32
	hello   []byte            // the server's connection reply
	jobData []byte            // the reply to REQ
	gets    map[string][]byte // key → the reply to its get
	frames  []pmixFrame       // every frame, both ways
}

// pmixCaptures reads every capture.
func pmixCaptures(tb testing.TB) []pmixCapture {
	tb.Helper()
	var out []pmixCapture
	add := func(name string, enc pmixEncoding, nspace string, rank uint32, gets map[uint32]string) {
		msgs := readCapture(tb, name)
		server := byTag(tb, captureFrames(tb, msgs, '<'))
		c := pmixCapture{name: name, enc: enc, nspace: nspace, rank: rank, hello: msgs[1].b,
			jobData: server[pmixFirstTag].payload, gets: map[string][]byte{}}
		for tag, key := range gets {
			c.gets[key] = server[tag].payload
		}
		c.frames = append(captureFrames(tb, msgs, '>'), captureFrames(tb, msgs, '<')...)
		out = append(out, c)
	}
	for _, c := range cCaptures {
		add(c.name, c.enc, c.nspace, 0, map[uint32]string{104: "ck"})
	}
	for _, c := range goCaptures {
		add(c.name, c.enc, c.nspace, 1, map[uint32]string{103: secretKey, 106: "tcp/0"})
	}
	return out
}

// jobDataValues returns the encoded values (type and data) of the job
// data's key-values, in order.
func jobDataValues(tb testing.TB, body []byte, enc pmixEncoding) (keys []string, values [][]byte) {
	tb.Helper()
	r := &pmixReader{b: body, enc: enc}
	r.one("namespace")
	r.str("namespace")
	for r.err == nil && r.left() > 0 {
		for range r.count("job data") {
			key := r.str("key")
			start := r.off
			r.value(key, 0)
			keys, values = append(keys, key), append(values, body[start:r.off])
		}
	}
	if r.err != nil {
		tb.Fatal(r.err)
	}
	return keys, values
}

// FuzzPMIxJobData: parseJobData on any bytes, in either encoding, for any
// namespace and rank: never a panic, a size within MaxSize, and a node's
// ranks only if they hold the rank.
func FuzzPMIxJobData(f *testing.F) {
	for _, c := range pmixCaptures(f) {
		f.Add(c.jobData, c.enc == pmixV3, c.nspace, c.rank)
	}
	f.Fuzz(func(t *testing.T, data []byte, v3 bool, nspace string, rank uint32) {
		s := parseJobData(data, pmixEnc(v3), nspace, rank)
		if s.size < 0 || s.size > MaxSize {
			t.Fatalf("size %d", s.size)
		}
		if s.lpeers != nil && !containsRank(s.lpeers, int(rank)) || len(s.lpeers) > len(data) {
			t.Fatalf("rank %d: local peers %v from %d bytes", rank, s.lpeers, len(data))
		}
		for _, p := range s.lpeers {
			if p < 0 || p >= MaxSize {
				t.Fatalf("local peer %d", p)
			}
		}
	})
}

// FuzzPMIxGetReply: parseGetReply on any bytes: never a panic, an error
// that wraps ErrPMIx, or a value of a decoded kind no bigger than the
// reply.
func FuzzPMIxGetReply(f *testing.F) {
	for _, c := range pmixCaptures(f) {
		for key, b := range c.gets {
			f.Add(b, c.enc == pmixV3, key)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte, v3 bool, key string) {
		v, err := parseGetReply(data, pmixEnc(v3), key)
		if err != nil {
			if !errors.Is(err, ErrPMIx) || v != nil {
				t.Fatalf("%v, %v: not an ErrPMIx", v, err)
			}
			return
		}
		checkDecoded(t, v, len(data))
	})
}

// FuzzPMIxHeader: parseHeader accepts 16 bytes or more whose length is at
// most pmixMaxMessage, and what it accepts re-encodes as read (but for
// the padding, which it ignores).
func FuzzPMIxHeader(f *testing.F) {
	for _, c := range pmixCaptures(f) {
		for _, fr := range c.frames {
			f.Add(fr.bytes()[:pmixHeaderLen])
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		h, err := parseHeader(data)
		switch {
		case len(data) < pmixHeaderLen || binary.BigEndian.Uint32(data[8:]) > pmixMaxMessage:
			if err == nil || !errors.Is(err, ErrPMIx) {
				t.Fatalf("accepted %x: %+v, %v", data, h, err)
			}
		case err != nil:
			t.Fatalf("refused %x: %v", data, err)
		case !bytes.Equal(appendHeader(nil, h)[:12], data[:12]):
			t.Fatalf("%x read as %+v", data, h)
		}
	})
}

// FuzzPMIxHello: parseHelloReply accepts exactly 8 bytes with status 0
// and returns the second word as the peer index.
func FuzzPMIxHello(f *testing.F) {
	for _, c := range pmixCaptures(f) {
		f.Add(c.hello)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := parseHelloReply(data)
		ok := len(data) == 8 && binary.BigEndian.Uint32(data) == 0
		if ok != (err == nil) || err != nil && !errors.Is(err, ErrPMIx) || ok && p != int32(binary.BigEndian.Uint32(data[4:])) {
			t.Fatalf("%x: peer index %d, %v", data, p, err)
		}
	})
}

// FuzzPMIxValue: pmixReader.value on any bytes, in either encoding: never
// a panic, never a read past the input, an error that wraps ErrPMIx, and
// what it decodes and allocates bounded by the input's length.
func FuzzPMIxValue(f *testing.F) {
	for _, c := range pmixCaptures(f) {
		_, values := jobDataValues(f, c.jobData, c.enc)
		for _, v := range values {
			f.Add(v, c.enc == pmixV3)
		}
	}
	sample := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	f.Fuzz(func(t *testing.T, data []byte, v3 bool) {
		r := &pmixReader{b: data, enc: pmixEnc(v3)}
		metrics.Read(sample)
		before := sample[0].Value.Uint64()
		v := r.value("v", 0)
		metrics.Read(sample)
		// Generous: the decoded value and the error's text; what matters
		// is that no length read from the input is allocated on trust.
		if got, limit := sample[0].Value.Uint64()-before, uint64(64*len(data)+1<<20); got > limit {
			t.Fatalf("decoding %d bytes allocated %d", len(data), got)
		}
		if r.off > len(data) {
			t.Fatalf("read to byte %d of %d", r.off, len(data))
		}
		if r.err != nil {
			if !errors.Is(r.err, ErrPMIx) {
				t.Fatalf("%v does not wrap ErrPMIx", r.err)
			}
			return
		}
		checkDecoded(t, v, len(data))
	})
}

// checkDecoded fails unless v is made of the kinds pmixReader.value
// returns and holds no more items, nor string or byte contents, than n
// bytes of input can carry.
func checkDecoded(t *testing.T, v any, n int) {
	t.Helper()
	var items, content int
	var walk func(v any)
	walk = func(v any) {
		items++
		switch v := v.(type) {
		case nil, bool, int64, uint64, [2]int64:
		case string:
			content += len(v)
		case []byte:
			content += len(v)
		case pmixProcID:
			content += len(v.nspace)
		case pmixInfoItem: // a value of type info
			content += len(v.key)
			walk(v.value)
		case []any:
			if cap(v) > 64+3*len(v) { // append's growth, never the length read
				t.Fatalf("an array of %d with room for %d", len(v), cap(v))
			}
			for _, e := range v {
				walk(e)
			}
		case []pmixInfoItem:
			if cap(v) > 64+3*len(v) {
				t.Fatalf("an info array of %d with room for %d", len(v), cap(v))
			}
			for _, e := range v {
				content += len(e.key)
				walk(e.value)
			}
		default:
			t.Fatalf("decoded a %T", v)
		}
	}
	walk(v)
	if items > n || content > n {
		t.Fatalf("%d bytes decoded to %d items holding %d bytes", n, items, content)
	}
}

// TestPMIxFuzzSeeds keeps testdata/fuzz/FuzzPMIx* in step with the
// servers' real replies and near misses built here (go test -run
// PMIxFuzzSeeds -rewrite-seeds).
func TestPMIxFuzzSeeds(t *testing.T) {
	caps := map[string]pmixCapture{}
	for _, c := range pmixCaptures(t) {
		caps[c.name] = c
	}
	seeds := map[string][]fuzzseed.Seed{}
	add := func(target, name string, values ...any) {
		seeds[target] = append(seeds[target], fuzzseed.Seed{Name: name, Values: values})
	}
	for _, name := range []string{"openmpi-c-v41", "openmpi-c-v3", "slurm-c-v41"} {
		c := caps[name]
		add("FuzzPMIxJobData", name, c.jobData, c.enc == pmixV3, c.nspace, c.rank)
		add("FuzzPMIxGetReply", name+"-ck", c.gets["ck"], c.enc == pmixV3, "ck")
		keys, values := jobDataValues(t, c.jobData, c.enc)
		seen := map[string]bool{}
		for i, key := range keys {
			if !seen[key] && (key == "pmix.node.arr" || key == "pmix.ssn.arr" || key == "pmix.pblob" && name == "openmpi-c-v3" || key == "pmix.job.size") {
				add("FuzzPMIxValue", fmt.Sprintf("%s-%s", name, key), values[i], c.enc == pmixV3)
			}
			seen[key] = true
		}
	}
	for _, name := range []string{"openmpi-go-v41", "openmpi-go-v3"} {
		c := caps[name]
		add("FuzzPMIxGetReply", name+"-secret", c.gets[secretKey], c.enc == pmixV3, secretKey)
		add("FuzzPMIxGetReply", name+"-tcp", c.gets["tcp/0"], c.enc == pmixV3, "tcp/0")
	}
	f := &fakePMIx{nspace: "fake-job.0", size: 3, nodes: [][]int{{0, 2}, {1}}, unknownFirst: true}
	for _, enc := range []pmixEncoding{pmixV4, pmixV3} {
		v3 := enc == pmixV3
		suffix := map[bool]string{false: "-v41", true: "-v3"}[v3]
		add("FuzzPMIxJobData", "fake-unknown-type"+suffix, f.jobData(enc), v3, f.nspace, uint32(2))
		add("FuzzPMIxGetReply", "not-found"+suffix, statusPayload(enc, -46), v3, "k")
		add("FuzzPMIxGetReply", "timeout"+suffix, statusPayload(enc, pmixErrTimeout), v3, "k")
		add("FuzzPMIxGetReply", "no-data"+suffix, statusPayload(enc, 0), v3, "k")
		add("FuzzPMIxValue", "arrays-5-deep"+suffix, nestedArray(enc, 5), v3)
		add("FuzzPMIxValue", "info-3-deep"+suffix, nestedInfo(enc, 3), v3)
		w := &pmixWriter{enc: enc}
		w.u16(pmixPID)
		w.u16(pmixUint32)
		w.u32(4242)
		add("FuzzPMIxValue", "pid"+suffix, w.b, v3)
		w = &pmixWriter{enc: enc}
		w.u16(pmixDataArray)
		w.u16(pmixString)
		w.size(math.MaxInt32)
		add("FuzzPMIxValue", "array-length-huge"+suffix, w.b, v3)
		w = &pmixWriter{enc: enc}
		w.u16(pmixDataArray)
		w.u16(pmixUint8)
		w.size(65) // past the room made before the first element
		w.b = append(w.b, bytes.Repeat([]byte{7}, 65)...)
		add("FuzzPMIxValue", "array-65"+suffix, w.b, v3)
	}
	add("FuzzPMIxValue", "uint64-max-v41", append([]byte{pmixUint64}, appendFlex(nil, math.MaxUint64)...), false)
	add("FuzzPMIxValue", "int64-min-v41", append([]byte{pmixInt64}, appendFlex(nil, zigzag(math.MinInt64))...), false)
	add("FuzzPMIxValue", "timeval-v41", []byte{pmixTimeval, 0x04, 0x01}, false)
	add("FuzzPMIxValue", "int-v3", []byte{0, pmixInt, 0, pmixInt32, 0xff, 0xff, 0xff, 0xfe}, true)
	add("FuzzPMIxValue", "size-v3", []byte{0, pmixSize, 0, pmixUint64, 0, 0, 0, 0, 0, 0, 1, 0}, true)
	add("FuzzPMIxValue", "bytes-length-huge-v41", []byte{pmixByteObject, 0xff, 0xff, 0xff, 0xff, 0x0f}, false)
	add("FuzzPMIxHeader", "client", caps["openmpi-go-v41"].frames[0].bytes()[:pmixHeaderLen])
	add("FuzzPMIxHeader", "length-huge", appendHeader(nil, pmixHeader{tag: 101, nbytes: pmixMaxMessage + 1}))
	add("FuzzPMIxHeader", "short", []byte{0, 0, 0, 0, 0, 0, 0, 0x65})
	add("FuzzPMIxHello", "pindex-1", caps["openmpi-go-v41"].hello)
	add("FuzzPMIxHello", "refused", []byte{0xff, 0xff, 0xff, 0xf4, 0, 0, 0, 0})
	add("FuzzPMIxHello", "status-only", []byte{0, 0, 0, 0})
	for target, s := range seeds {
		fuzzseed.Sync(t, target, s)
	}
}
