package shm

import (
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/commtune/commtune/internal/driver"
	"github.com/commtune/commtune/internal/fuzzseed"
)

// fuzzRegion is the receive region the records of FuzzRingRecords may
// address, and its size.
const (
	fuzzRegion     = 7
	fuzzRegionSize = 256
)

// FuzzRingRecords publishes arbitrary bytes in a ring, as a broken or
// hostile peer could, and delivers them as the consumer does: every record
// must be delivered or rejected as a protocol violation, never read or
// written out of bounds, and the consumer must make progress.
// The seed corpus is testdata/fuzz/FuzzRingRecords (see TestFuzzSeeds).
func FuzzRingRecords(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		if _, err := deliverRing(t, data); err != nil && !errors.Is(err, driver.ErrProtocol) {
			t.Fatalf("unexpected error %v", err)
		}
	})
}

// deliverRing publishes data in a fresh ring and delivers its records to a
// recorder until the ring is empty or a record is rejected.
func deliverRing(t *testing.T, data []byte) (*recorder, error) {
	// Plain memory behaves as a mapping would, and keeps the fuzzer fast.
	hdr, ringData := make([]byte, pageSize), make([]byte, pageSize)
	r := newRing(hdr, ringData)
	n := copy(ringData, data)
	r.tail.Store(uint64(n))

	h := newRecorder()
	h.regions[fuzzRegion] = make([]byte, fuzzRegionSize)
	tr := &Transport{cfg: Config{Handler: h, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}}
	rl := &rail{t: tr, peer: 1}
	for records := 0; ; records++ {
		if records > n/recHeader+1 {
			t.Fatalf("%d records out of %d bytes", records, n)
		}
		rec, err := r.peek()
		if err == nil && rec == nil {
			return h, nil
		}
		if err == nil {
			if len(rec) < recHeader || len(rec) > n {
				t.Fatalf("record of %d bytes out of %d", len(rec), n)
			}
			err = tr.handle(rl, rec)
		}
		if err != nil {
			return h, err
		}
		r.release(rec)
	}
}

// FuzzSegmentHeader checks arbitrary header pages as a rank mapping its
// peer's segment does: a header is accepted only when its ring count and
// capacity are in range and describe exactly the mapped size.
// The seed corpus is testdata/fuzz/FuzzSegmentHeader (see TestFuzzSeeds).
func FuzzSegmentHeader(f *testing.F) {
	f.Fuzz(func(t *testing.T, header []byte, size uint32) {
		mem := make([]byte, pageSize)
		copy(mem, header)
		s := &segment{mem: mem}
		if err := s.check(int(size)); err != nil {
			return
		}
		if s.nrings < 1 || s.nrings > maxRings || s.poolSlots > maxPoolSlots || segmentSize(s.nrings, s.capacity, s.poolSmall, s.poolSlots) != int(size) {
			t.Fatalf("accepted %d rings of %d bytes and %d+%d fragments in %d bytes", s.nrings, s.capacity, s.poolSmall, s.poolSlots, size)
		}
		for i := 0; i < s.nrings; i++ {
			s.sender(i) // must stay inside the header page
		}
	})
}

type seed struct {
	name string
	data []byte
	size uint32 // FuzzSegmentHeader only
}

// record builds one ring record: header fields, then body, padded to 16.
func record(kind, pad, flags byte, aux uint64, body ...[]byte) []byte {
	n := recHeader
	for _, b := range body {
		n += len(b)
	}
	rec := make([]byte, align(n, recAlign))
	le.PutUint32(rec, uint32(n))
	rec[4], rec[5], rec[6] = kind, pad, flags
	le.PutUint64(rec[8:], aux)
	off := recHeader
	for _, b := range body {
		off += copy(rec[off:], b)
	}
	return rec
}

func u64(v uint64) []byte { b := make([]byte, 8); le.PutUint64(b, v); return b }

func cat(parts ...[]byte) []byte {
	var out []byte
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func ringSeeds() []seed {
	payload := []byte("0123456789abcdef0123456789abcdef")
	put := func(pad, flags byte, off uint64) []byte {
		return record(kindPut, pad, flags, fuzzRegion, u64(off), make([]byte, pad), payload)
	}
	wrapTo := func(prefix []byte) []byte {
		w := make([]byte, pageSize-len(prefix))
		le.PutUint32(w, uint32(len(w)))
		w[4] = kindWrap
		return cat(prefix, w)
	}
	return []seed{
		{name: "packet", data: record(kindPacket, 0, 0, 0, []byte("core entries"))},
		{name: "put", data: put(40, 0, 8)},
		{name: "put-cachefree", data: put(0, putCacheFree, 0)},
		{name: "put-past-region", data: put(0, 0, fuzzRegionSize-8)},
		{name: "put-unknown-region", data: record(kindPut, 0, 0, 99, u64(0), payload)},
		{name: "put-pad-too-big", data: put(64, 0, 0)},
		{name: "pipe-put-without-pipe", data: record(kindPipePut, 0, 0, fuzzRegion, u64(0), u64(16))},
		{name: "pipe-ack-unowed", data: record(kindPipeAck, 0, 0, 4096)},
		{name: "bye", data: cat(record(kindPacket, 0, 0, 0, []byte("last")), record(kindBye, 0, 0, 0))},
		{name: "wrap", data: wrapTo(record(kindPacket, 0, 0, 0, payload))},
		{name: "wrap-short", data: record(kindWrap, 0, 0, 0)},
		{name: "unknown-kind", data: record(9, 0, 0, 0)},
		{name: "length-below-header", data: []byte{4, 0, 0, 0, kindPacket, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}},
		{name: "partial-header", data: []byte{32, 0, 0, 0, kindPacket}},
		{name: "three-packets", data: cat(record(kindPacket, 0, 0, 0, payload[:3]), record(kindPacket, 0, 0, 0), record(kindPacket, 0, 0, 0, payload))},
	}
}

func headerSeeds(t *testing.T) []seed {
	dir := t.TempDir()
	var out []seed
	for _, tc := range []struct {
		name     string
		senders  []int
		capacity int
		pool     int
	}{{"two-rings", []int{1, 2}, 2 * pageSize, 0}, {"one-ring", []int{5}, pageSize, 0}, {"pool", []int{1, 2, 3}, pageSize, 8}} {
		s, err := createSegment(filepath.Join(dir, tc.name), 0, tc.senders, tc.capacity, DefaultBudget, tc.pool)
		if err != nil {
			t.Fatal(err)
		}
		hdr := append([]byte(nil), s.mem[:offSenders+4*len(tc.senders)]...)
		s.unmap()
		// What varies from run to run: the pid and the probe.
		le.PutUint32(hdr[offPid:], 4242)
		le.PutUint64(hdr[offProbe:], 0x7f00_0000_1000)
		le.PutUint64(hdr[offProbeVal:], 0x9ac0e06e7577_33c0)
		size := uint32(segmentSize(len(tc.senders), tc.capacity, smallPerLarge*tc.pool, tc.pool))
		out = append(out, seed{name: tc.name, data: hdr, size: size})
		out = append(out, seed{name: tc.name + "-size-off", data: hdr, size: size + pageSize})
	}
	bad := append([]byte(nil), out[0].data...)
	le.PutUint32(bad[offRings:], maxRings+1)
	out = append(out, seed{name: "too-many-rings", data: bad, size: uint32(segmentSize(maxRings+1, 2*pageSize, 0, 0))})
	return out
}

// TestFuzzSeeds checks the seeds are what they claim (valid ones are
// accepted, so the fuzzers reach past the checks) and keeps testdata/fuzz
// in step with them: run with -rewrite-seeds after changing the format.
func TestFuzzSeeds(t *testing.T) {
	hdrs := headerSeeds(t)
	for _, s := range []seed{hdrs[0], hdrs[4]} { // two-rings, pool // two-rings, pool
		seg := &segment{mem: make([]byte, pageSize)}
		copy(seg.mem, s.data)
		if err := seg.check(int(s.size)); err != nil {
			t.Errorf("seed %s rejected: %v", s.name, err)
		}
	}
	valid := map[string]int{"packet": 1, "put": 0, "put-cachefree": 0, "bye": 1, "wrap": 1, "three-packets": 3} // packets each delivers
	for _, s := range ringSeeds() {
		want, ok := valid[s.name]
		h, err := deliverRing(t, s.data)
		switch {
		case ok && (err != nil || len(h.packets) != want):
			t.Errorf("seed %s: %d packets, error %v; want %d packets", s.name, len(h.packets), err, want)
		case !ok && !errors.Is(err, driver.ErrProtocol):
			t.Errorf("seed %s: error %v, want a protocol violation", s.name, err)
		}
	}
	var records, headers []fuzzseed.Seed
	for _, s := range ringSeeds() {
		records = append(records, fuzzseed.Seed{Name: s.name, Values: []any{s.data}})
	}
	for _, s := range hdrs {
		headers = append(headers, fuzzseed.Seed{Name: s.name, Values: []any{s.data, s.size}})
	}
	fuzzseed.Sync(t, "FuzzRingRecords", records)
	fuzzseed.Sync(t, "FuzzSegmentHeader", headers)
}
