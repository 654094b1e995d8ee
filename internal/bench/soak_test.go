package bench

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/commtune/commtune"
)

func TestSoakFillCheck(t *testing.T) {
	id := PayloadID{Seed: 7, Step: 12, Rank: 3, Part: 1}
	for _, size := range []int{0, 1, 7, 8, 9, 4096, 65537} {
		buf := make([]byte, size)
		SoakFill(buf, id)
		if off := SoakCheck(buf, id); off != -1 {
			t.Fatalf("size %d: a fresh fill fails at %d", size, off)
		}
		for _, at := range []int{0, size / 2, size - 1} {
			if size == 0 {
				break
			}
			buf[at] ^= 0x10
			if off := SoakCheck(buf, id); off != at {
				t.Errorf("size %d: byte %d flipped, found at %d", size, at, off)
			}
			buf[at] ^= 0x10
		}
	}
	// Any other field of the identity gives other bytes.
	buf := make([]byte, 64)
	SoakFill(buf, id)
	for _, other := range []PayloadID{{8, 12, 3, 1}, {7, 13, 3, 1}, {7, 12, 4, 1}, {7, 12, 3, 2}, {7, 3, 12, 1}} {
		if SoakCheck(buf, other) == -1 {
			t.Errorf("the payload of %+v passes as %+v's", id, other)
		}
	}
	// A part filled from an offset is that part of the whole.
	part := make([]byte, 21)
	soakFillFrom(part, id, 13)
	if off := soakCheckFrom(buf[13:34], id, 13); off != -1 || string(part) != string(buf[13:34]) {
		t.Errorf("filling from offset 13 differs from the whole at %d", off)
	}
}

func TestSoakErrorsLimit(t *testing.T) {
	var e soakErrors
	for i := range 15 {
		e.wrong(int64(i), "allreduce", 2, 5, 100, 4096)
	}
	if e.count != 15 || len(e.msgs) != maxPayloadErrors {
		t.Fatalf("%d errors, %d messages; want 15 and %d", e.count, len(e.msgs), maxPayloadErrors)
	}
	want := "step 0 allreduce: rank 2 got rank 5's data with a wrong byte at offset 100 of 4096"
	if e.msgs[0] != want {
		t.Errorf("message %q, want %q", e.msgs[0], want)
	}
}

func TestJudgeSoak(t *testing.T) {
	flat := func(n int) []SoakSample {
		s := make([]SoakSample, n)
		for i := range s {
			s[i] = SoakSample{Steps: int64(100 * (i + 1)), RSSSum: 100 << 20, ShmMapped: 32 << 20, ShmFiles: 16 << 20, FDs: 40, Goroutines: 60}
		}
		// The warm-up sample may differ in everything.
		s[0].RSSSum, s[0].FDs, s[0].Goroutines = 50<<20, 30, 50
		return s
	}
	tests := []struct {
		name   string
		edit   func([]SoakSample) []SoakSample
		fail   string // a failure it must name; "" passes
		nFails int
	}{
		{"flat", func(s []SoakSample) []SoakSample { return s }, "", 0},
		{"noise within 5 %", func(s []SoakSample) []SoakSample {
			for i := range s[1:] {
				s[1+i].RSSSum += int64(i%3) * (2 << 20)
			}
			return s
		}, "", 0},
		{"falling memory", func(s []SoakSample) []SoakSample {
			for i := range s[1:] {
				s[1+i].RSSSum -= int64(i) * (5 << 20)
			}
			return s
		}, "", 0},
		{"growing RSS", func(s []SoakSample) []SoakSample {
			for i := range s[1:] {
				s[1+i].RSSSum += int64(i) * (2 << 20)
			}
			return s
		}, "RSS (sum over ranks) grew", 1},
		{"growing mapped shm", func(s []SoakSample) []SoakSample {
			for i := range s[1:] {
				s[1+i].ShmMapped += int64(i) << 20
			}
			return s
		}, "mapped shared memory grew", 1},
		{"growing shm files", func(s []SoakSample) []SoakSample {
			s[len(s)-1].ShmFiles *= 2
			return s
		}, "shared-memory files grew", 1},
		{"one more fd", func(s []SoakSample) []SoakSample { s[len(s)-1].FDs++; return s }, "open descriptors went from 40 to 41", 1},
		{"fd back down", func(s []SoakSample) []SoakSample { s[3].FDs += 2; return s }, "", 0},
		{"one more goroutine", func(s []SoakSample) []SoakSample { s[len(s)-1].Goroutines++; return s }, "goroutines went from 60 to 61", 1},
		{"one payload error", func(s []SoakSample) []SoakSample { s[len(s)-1].PayloadErrors = 1; return s }, "1 payload errors", 1},
		{"too few samples", func(s []SoakSample) []SoakSample { return s[:2] }, "2 samples: want at least 3", 1},
		{"no steps", func(s []SoakSample) []SoakSample {
			for i := range s {
				s[i].Steps = 5
			}
			return s
		}, "no steps ran after the warm-up", 1},
		{"leak and error", func(s []SoakSample) []SoakSample {
			s[len(s)-1].PayloadErrors = 3
			s[len(s)-1].Goroutines += 8
			return s
		}, "3 payload errors", 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := JudgeSoak(tc.edit(flat(10)))
			if v.Pass != (tc.fail == "") || len(v.Failures) != tc.nFails {
				t.Fatalf("pass %v with %q; want %d failures", v.Pass, v.Failures, tc.nFails)
			}
			if tc.fail != "" && !strings.Contains(strings.Join(v.Failures, "\n"), tc.fail) {
				t.Fatalf("failures %q do not say %q", v.Failures, tc.fail)
			}
		})
	}
}

func TestParseShmMapped(t *testing.T) {
	smaps := `00400000-00a00000 r-xp 00000000 08:01 123 /usr/bin/commtune
Size:               6144 kB
Rss:                2048 kB
7f0000000000-7f0000100000 rw-s 00000000 00:1a 456 /dev/shm/commtune-job1-0
Size:               1024 kB
Rss:                 512 kB
VmFlags: rd wr sh mr mw me ms sd
7f0000100000-7f0000140000 rw-s 00000000 00:1a 789 /dev/shm/commtune-region-ab12 (deleted)
Size:                256 kB
7f0000140000-7f0000150000 rw-p 00000000 00:00 0
Size:                 64 kB
`
	got, err := ParseShmMapped([]byte(smaps))
	if err != nil || got != (1024+256)<<10 {
		t.Fatalf("ParseShmMapped = %d, %v; want %d", got, err, (1024+256)<<10)
	}
	if _, err := ParseShmMapped([]byte("7f00-7f01 rw-s 0 00:1a 4 /dev/shm/x\nSize: lots kB\n")); err == nil {
		t.Error("a bad size parsed")
	}
	if _, err := ReadRankUsage(); err != nil {
		t.Skipf("no /proc here: %v", err)
	}
}

// TestSoakLocal runs a short soak on goroutine ranks: every payload right,
// and the samples taken.
func TestSoakLocal(t *testing.T) {
	cfg := SoakConfig{Duration: 3 * time.Second, Every: time.Second, Seed: 42, MaxSize: 256 << 10, OneProcess: true}
	var rep *SoakReport
	err := commtune.Local(4, func(c *commtune.Comm) error {
		r, err := Soak(context.Background(), c, cfg)
		if c.Rank() == 0 {
			rep = r
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Samples) < 2 {
		t.Fatalf("%d samples", len(rep.Samples))
	}
	last := rep.Samples[len(rep.Samples)-1]
	if last.PayloadErrors != 0 || len(rep.Errors) != 0 {
		t.Fatalf("%d payload errors: %q", last.PayloadErrors, rep.Errors)
	}
	if last.Steps == 0 || last.RSSSum == 0 || last.Goroutines == 0 {
		t.Fatalf("last sample %+v", last)
	}
	t.Logf("%d steps of %d kinds", last.Steps, len(rep.Ops))
}
