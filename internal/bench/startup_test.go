package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/commtune/commtune"
	"github.com/commtune/commtune/internal/fuzzseed"
)

// fixture is testdata/meminfo, a whole /proc/meminfo of a 24 GiB VM.
var fixture = MemInfo{Total: 24684084 << 10, Free: 23404104 << 10, Buffers: 14924 << 10, Cached: 716240 << 10,
	SReclaimable: 307644 << 10, Shmem: 8872 << 10}

func readFixture(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestParseMemInfo(t *testing.T) {
	minimal := "MemTotal: 1000 kB\nMemFree: 500 kB\nBuffers: 10 kB\nCached: 200 kB\nSReclaimable: 40 kB\nShmem: 30 kB\n"
	tests := []struct {
		name    string
		text    string
		want    MemInfo
		wantErr string // substring of the error; "" for success
	}{
		{"fixture", readFixture(t, "meminfo"), fixture, ""},
		{"minimal", minimal, MemInfo{1000 << 10, 500 << 10, 10 << 10, 200 << 10, 40 << 10, 30 << 10}, ""},
		{"no final newline, other order, CRLF", "Shmem: 30 kB\r\nSReclaimable: 40 kB\r\nCached: 200 kB\r\nBuffers: 10 kB\r\nMemFree: 500 kB\r\nMemTotal: 1000 kB",
			MemInfo{1000 << 10, 500 << 10, 10 << 10, 200 << 10, 40 << 10, 30 << 10}, ""},
		{"unknown and odd lines skipped", "HugePages_Total:       0\nnonsense\n\n" + minimal + "SwapCached: x\n",
			MemInfo{1000 << 10, 500 << 10, 10 << 10, 200 << 10, 40 << 10, 30 << 10}, ""},
		{"malformed value", readFixture(t, "meminfo-malformed"), MemInfo{}, `meminfo line 23 "Shmem:              88x72 kB": "88x72" is not a size in kB`},
		{"truncated", readFixture(t, "meminfo-truncated"), MemInfo{}, `meminfo line 4 "Buffers:        ": want "Buffers: VALUE kB"`},
		{"empty", "", MemInfo{}, "meminfo: no MemTotal line"},
		{"missing field", strings.Replace(minimal, "SReclaimable: 40 kB\n", "", 1), MemInfo{}, "meminfo: no SReclaimable line"},
		{"no unit", strings.Replace(minimal, "Cached: 200 kB", "Cached: 200", 1), MemInfo{}, `want "Cached: VALUE kB"`},
		{"other unit", strings.Replace(minimal, "Cached: 200 kB", "Cached: 200 MB", 1), MemInfo{}, `want "Cached: VALUE kB"`},
		{"negative", strings.Replace(minimal, "Cached: 200 kB", "Cached: -200 kB", 1), MemInfo{}, `"-200" is not a size in kB`},
		{"too large", strings.Replace(minimal, "Cached: 200 kB", "Cached: 1125899906842625 kB", 1), MemInfo{}, "is not a size in kB from 0 to 1125899906842624"},
		{"twice", minimal + "Shmem: 31 kB\n", MemInfo{}, "meminfo line 7: a second Shmem line"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseMemInfo([]byte(tc.text))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ParseMemInfo = %+v, %v; want an error with %q", got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("ParseMemInfo = %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

func TestMemInfoInUse(t *testing.T) {
	// free(1) on the fixture's machine: used 241172 kB (total − free −
	// buff/cache), shared 8872 kB.
	if got, want := fixture.InUse(), int64(241172+8872)<<10; got != want {
		t.Fatalf("InUse = %d, want %d", got, want)
	}
}

func TestReadMemInfo(t *testing.T) {
	if _, err := ReadMemInfo(filepath.Join("testdata", "meminfo-malformed")); err == nil || !strings.Contains(err.Error(), "testdata/meminfo-malformed: meminfo line 23") {
		t.Errorf("malformed file: %v, want an error naming the file and the line", err)
	}
	if _, err := ReadMemInfo(filepath.Join("testdata", "absent")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("absent file: %v", err)
	}
	if _, err := os.Stat(MemInfoPath); err != nil {
		t.Skipf("no %s: %v", MemInfoPath, err)
	}
	m, err := SystemMemInfo()
	if err != nil || m.Total <= 0 || m.InUse() <= 0 || m.InUse() > m.Total {
		t.Fatalf("this machine's: %+v (in use %d), %v", m, m.InUse(), err)
	}
}

// formatMemInfo writes m the way the kernel does.
func formatMemInfo(m MemInfo) string {
	return fmt.Sprintf("MemTotal: %d kB\nMemFree: %d kB\nBuffers: %d kB\nCached: %d kB\nSReclaimable: %d kB\nShmem: %d kB\n",
		m.Total>>10, m.Free>>10, m.Buffers>>10, m.Cached>>10, m.SReclaimable>>10, m.Shmem>>10)
}

// FuzzParseMemInfo checks ParseMemInfo never panics, and that what it
// accepts is within bounds and reads back the same once written out. The
// seed corpus is testdata/fuzz/FuzzParseMemInfo (see TestMemInfoFuzzSeeds).
func FuzzParseMemInfo(f *testing.F) {
	f.Fuzz(func(t *testing.T, text []byte) {
		m, err := ParseMemInfo(text)
		if err != nil {
			return
		}
		for _, v := range []int64{m.Total, m.Free, m.Buffers, m.Cached, m.SReclaimable, m.Shmem} {
			if v < 0 || v > maxMemInfoKB<<10 || v%1024 != 0 {
				t.Fatalf("ParseMemInfo(%q) = %+v", text, m)
			}
		}
		if back, err := ParseMemInfo([]byte(formatMemInfo(m))); err != nil || back != m {
			t.Fatalf("ParseMemInfo(%q) = %+v; written out and read back: %+v, %v", text, m, back, err)
		}
	})
}

// TestMemInfoFuzzSeeds keeps testdata/fuzz/FuzzParseMemInfo in step with
// the fixtures and a few near misses (go test -run MemInfoFuzzSeeds
// -rewrite-seeds).
func TestMemInfoFuzzSeeds(t *testing.T) {
	texts := []string{
		readFixture(t, "meminfo"),
		readFixture(t, "meminfo-malformed"),
		readFixture(t, "meminfo-truncated"),
		formatMemInfo(MemInfo{1 << 20, 1 << 19, 1 << 10, 1 << 18, 1 << 12, 1 << 11}),
		"MemTotal: 1125899906842624 kB\nMemFree: 0 kB\nBuffers: 0 kB\nCached: 0 kB\nSReclaimable: 0 kB\nShmem: 1125899906842624 kB\n",
		"MemTotal:\x00 1 kB\nShmem: 1 kB\nShmem: 2 kB\n",
		"",
	}
	var seeds []fuzzseed.Seed
	for i, s := range texts {
		seeds = append(seeds, fuzzseed.Seed{Name: fmt.Sprintf("seed-%02d", i), Values: []any{[]byte(s)}})
	}
	fuzzseed.Sync(t, "FuzzParseMemInfo", seeds)
}

// scripted returns a read function that serves infos in turn, then the
// last one again, closing served once all have been read.
func scripted(infos ...MemInfo) (func() (MemInfo, error), chan struct{}) {
	served := make(chan struct{})
	i := 0
	return func() (MemInfo, error) {
		m := infos[min(i, len(infos)-1)]
		if i++; i == len(infos) {
			close(served)
		}
		return m, nil
	}, served
}

func TestMemWatch(t *testing.T) {
	mi := func(inUse, shmem int64) MemInfo { return MemInfo{Total: inUse + 100, Free: 100, Shmem: shmem} } // InUse = inUse + shmem
	tests := []struct {
		name  string
		infos []MemInfo // the idle sample first
		want  MemPeak   // but Samples, which depends on timing
	}{
		{"rises and falls", []MemInfo{mi(1000, 10), mi(1500, 10), mi(3000, 50), mi(1200, 10)}, MemPeak{InUse: 2040, Shmem: 40}},
		{"peaks apart", []MemInfo{mi(1000, 10), mi(1000, 500), mi(4000, 10), mi(900, 5)}, MemPeak{InUse: 3000, Shmem: 490}},
		{"below idle", []MemInfo{mi(1000, 10), mi(800, 5), mi(700, 0)}, MemPeak{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			read, served := scripted(tc.infos...)
			w, err := WatchMemory(read, time.Millisecond)
			if err != nil {
				t.Fatal(err)
			}
			<-served
			got, err := w.Stop()
			if err != nil || got.InUse != tc.want.InUse || got.Shmem != tc.want.Shmem || got.Samples < len(tc.infos)-1 {
				t.Fatalf("Stop = %+v, %v; want %+v after at least %d samples", got, err, tc.want, len(tc.infos)-1)
			}
		})
	}
}

func TestMemWatchErrors(t *testing.T) {
	broken := errors.New("no meminfo")
	if _, err := WatchMemory(func() (MemInfo, error) { return MemInfo{}, broken }, 0); !errors.Is(err, broken) {
		t.Errorf("idle sample failing: %v", err)
	}
	calls := 0
	w, err := WatchMemory(func() (MemInfo, error) {
		if calls++; calls > 2 {
			return MemInfo{}, broken
		}
		return fixture, nil
	}, time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	if p, err := w.Stop(); !errors.Is(err, broken) || p.Samples != 1 {
		t.Errorf("a sample failing: %+v, %v; want 1 sample and the error", p, err)
	}
}

func TestMeasureStartup(t *testing.T) {
	read, _ := scripted(fixture, MemInfo{Total: fixture.Total, Free: fixture.Free - 8<<20, Shmem: fixture.Shmem + 2<<20,
		Buffers: fixture.Buffers, Cached: fixture.Cached + 2<<20, SReclaimable: fixture.SReclaimable})
	times := StartupTimes{Wall: 50 * time.Millisecond, FirstCollective: 40 * time.Millisecond}
	s, err := MeasureStartup(read, time.Millisecond, func() (StartupTimes, error) {
		time.Sleep(20 * time.Millisecond)
		return times, nil
	})
	// Free fell by 8M of which 2M went to Cached as shared memory: 8M in use.
	if err != nil || s.StartupTimes != times || s.Mem.InUse != 8<<20 || s.Mem.Shmem != 2<<20 {
		t.Fatalf("MeasureStartup = %+v, %v", s, err)
	}
	failed := errors.New("launcher failed")
	if _, err := MeasureStartup(read, time.Millisecond, func() (StartupTimes, error) { return StartupTimes{}, failed }); !errors.Is(err, failed) {
		t.Fatalf("a failed launch: %v", err)
	}
}

func TestParseStartupStart(t *testing.T) {
	if got, err := ParseStartupStart("1700000000123456789"); err != nil || got.UnixNano() != 1700000000123456789 {
		t.Errorf("ParseStartupStart = %v, %v", got, err)
	}
	for _, s := range []string{"", "soon", "-5", "0", "1.5e18"} {
		if _, err := ParseStartupStart(s); err == nil || !strings.Contains(err.Error(), EnvStartupStart) {
			t.Errorf("ParseStartupStart(%q): %v, want an error naming %s", s, err, EnvStartupStart)
		}
	}
}

// TestStartupLocal runs the startup job's work on goroutine ranks.
func TestStartupLocal(t *testing.T) {
	for _, n := range []int{1, 2, 5} {
		start := time.Now()
		var rep *StartupRank
		err := commtune.Local(n, func(c *commtune.Comm) error {
			r, err := Startup(context.Background(), c, start)
			if c.Rank() == 0 {
				rep = r
			} else if r != nil {
				t.Errorf("rank %d returned a line", c.Rank())
			}
			return err
		})
		elapsed := time.Since(start)
		if err != nil || rep == nil || rep.Ranks != n || rep.FirstCollectiveNS <= 0 || time.Duration(rep.FirstCollectiveNS) > elapsed {
			t.Fatalf("%d ranks: %+v, %v (took %v)", n, rep, err, elapsed)
		}
		if _, err := rep.Times(n+1, elapsed); err == nil {
			t.Errorf("Times accepted a line of %d ranks for %d", n, n+1)
		}
		if got, err := rep.Times(n, elapsed); err != nil || got.Wall != elapsed || got.FirstCollective != time.Duration(rep.FirstCollectiveNS) {
			t.Errorf("Times = %+v, %v", got, err)
		}
	}
}

func TestStartupTable(t *testing.T) {
	sample := func(wall, first time.Duration, peak, shm int64) StartupSample {
		return StartupSample{StartupTimes{wall, first}, MemPeak{InUse: peak, Shmem: shm}}
	}
	ours := StartupSideOf([]StartupSample{
		sample(300*time.Millisecond, 200*time.Millisecond, 40<<20, 8<<20),
		sample(500*time.Millisecond, 400*time.Millisecond, 60<<20, 12<<20),
		sample(400*time.Millisecond, 250*time.Millisecond, 50<<20, 10<<20),
	}, nil)
	if ours.Launches != 3 || ours.WallS != 0.4 || ours.FirstCollectiveS != 0.25 || ours.PeakMiB != 50 || ours.ShmMiB != 10 || ours.Error != "" {
		t.Fatalf("StartupSideOf = %+v, want the medians", ours)
	}
	ref := StartupSideOf([]StartupSample{sample(800*time.Millisecond, 600*time.Millisecond, 100<<20, 30<<20)}, nil)
	failed := StartupSideOf(nil, errors.New("launch: rank 3 killed by signal 9\nrank 3: out of memory"))
	rep := &StartupReport{Bench: "startup", Transport: "auto", Ref: "openmpi", Rounds: 3, CPUs: 2, Rows: []StartupRow{
		NewStartupRow(8, ours, &ref),
		NewStartupRow(256, failed, &ref),
	}}
	if r := rep.Rows[0]; r.WallRatio != 0.5 || r.PeakRatio != 0.5 {
		t.Errorf("ratios %+v", r)
	}
	if r := rep.Rows[1]; r.WallRatio != 0 || r.PeakRatio != 0 || !rep.Failed() {
		t.Errorf("a failed side has ratios, or the report does not say it failed: %+v", r)
	}
	var b bytes.Buffer
	if err := WriteStartupTable(&b, rep); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 4 {
		t.Fatalf("want a title, a header and 2 rows:\n%s", b.String())
	}
	for _, want := range []string{"openmpi wall(s)", "peak ratio"} {
		if !strings.Contains(lines[1], want) {
			t.Errorf("header lacks %q: %s", want, lines[1])
		}
	}
	if f := strings.Fields(lines[2]); strings.Join(f, " ") != "8 0.400 0.250 50.0 10.0 0.800 0.600 100.0 30.0 0.50 0.50" {
		t.Errorf("row 8: %q", lines[2])
	}
	if f := strings.Join(strings.Fields(lines[3]), " "); f != "256 - - - - 0.800 0.600 100.0 30.0 - - commtune: launch: rank 3 killed by signal 9 rank 3: out of memory" {
		t.Errorf("row 256: %q", lines[3])
	}
	alone := &StartupReport{Bench: "startup", Transport: "shm", Rounds: 1, CPUs: 2, Rows: []StartupRow{NewStartupRow(8, ours, nil)}}
	if alone.Failed() {
		t.Error("a report without failures says it failed")
	}
	b.Reset()
	if err := WriteStartupTable(&b, alone); err != nil || strings.Contains(b.String(), "ratio") {
		t.Errorf("without a reference: %v\n%s", err, b.String())
	}
}
