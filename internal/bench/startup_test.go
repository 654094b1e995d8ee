package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/commtune/commtune"
	"github.com/commtune/commtune/internal/fuzzseed"
)

// fixture is testdata/meminfo, a whole /proc/meminfo of a 24 GiB VM.
var fixture = MemInfo{Shmem: 8872 << 10}

// rollupFixture is testdata/smaps_rollup, a shell's.
var rollupFixture = SmapsRollup{Pss: 1295 << 10}

func readFixture(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestParseMemInfo(t *testing.T) {
	minimal := "MemTotal: 1000 kB\nMemFree: 500 kB\nShmem: 30 kB\n"
	tests := []struct {
		name    string
		text    string
		want    MemInfo
		wantErr string // substring of the error; "" for success
	}{
		{"fixture", readFixture(t, "meminfo"), fixture, ""},
		{"minimal", minimal, MemInfo{30 << 10}, ""},
		{"no final newline, CRLF", "Shmem: 30 kB\r\nMemTotal: 1000 kB", MemInfo{30 << 10}, ""},
		{"unknown and odd lines skipped", "HugePages_Total:       0\nnonsense\n\n" + minimal + "SwapCached: x\nShmemHugePages: y\n", MemInfo{30 << 10}, ""},
		{"malformed value", readFixture(t, "meminfo-malformed"), MemInfo{}, `meminfo line 23 "Shmem:              88x72 kB": "88x72" is not a size in kB`},
		{"truncated", readFixture(t, "meminfo-truncated"), MemInfo{}, "meminfo: no Shmem line"},
		{"empty", "", MemInfo{}, "meminfo: no Shmem line"},
		{"no unit", "Shmem: 200", MemInfo{}, `meminfo line 1 "Shmem: 200": want "Shmem: VALUE kB"`},
		{"other unit", "Shmem: 200 MB", MemInfo{}, `want "Shmem: VALUE kB"`},
		{"negative", "Shmem: -200 kB", MemInfo{}, `"-200" is not a size in kB`},
		{"too large", "Shmem: 1125899906842625 kB", MemInfo{}, "is not a size in kB from 0 to 1125899906842624"},
		{"twice", minimal + "Shmem: 31 kB\n", MemInfo{}, "meminfo line 4: a second Shmem line"},
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

func TestParseSmapsRollup(t *testing.T) {
	tests := []struct {
		name    string
		text    string
		want    SmapsRollup
		wantErr string // substring of the error; "" for success
	}{
		{"fixture", readFixture(t, "smaps_rollup"), rollupFixture, ""},
		// Pss_Anon and the others share Pss's prefix, not its name.
		{"Pss among its kin", "Pss_Anon: 5 kB\nPss: 7 kB\nPss_Shmem: 9 kB\nSwapPss: 1 kB\n", SmapsRollup{7 << 10}, ""},
		{"malformed value", readFixture(t, "smaps_rollup-malformed"), SmapsRollup{}, `smaps_rollup line 3 "Pss:                12x5 kB": "12x5" is not a size in kB from 0 to 1125899906842624`},
		{"empty", "", SmapsRollup{}, "smaps_rollup: no Pss line"},
		{"no Pss", strings.Replace(readFixture(t, "smaps_rollup"), "Pss:", "Ps:", 1), SmapsRollup{}, "smaps_rollup: no Pss line"},
		{"twice", "Pss: 1 kB\nPss: 2 kB\n", SmapsRollup{}, "smaps_rollup line 2: a second Pss line"},
		{"pages, not kB", "Pss: 3 pages\n", SmapsRollup{}, `want "Pss: VALUE kB"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseSmapsRollup([]byte(tc.text))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ParseSmapsRollup = %+v, %v; want an error with %q", got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("ParseSmapsRollup = %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

func TestParseStatPPID(t *testing.T) {
	tests := []struct {
		name, text string
		want       int
		wantErr    string
	}{
		{"real", "22518 (cat) R 22513 22513 21451 0 -1 4194304 99 0 0 0\n", 22513, ""},
		{"name with spaces and parentheses", "7 (a) b) S (c) R 41 7 7\n", 41, ""},
		{"init", "1 (systemd) S 0 1 1", 0, ""},
		{"no name", "7 a S 41", 0, `no ')'`},
		{"cut after the name", "7 (mpirun) S", 0, "no parent pid"},
		{"not a pid", "7 (x) S -3 7", 0, `parent pid "-3" is not a pid`},
		{"empty", "", 0, `no ')'`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseStatPPID([]byte(tc.text))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("parseStatPPID = %d, %v; want an error with %q", got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("parseStatPPID = %d, %v; want %d", got, err, tc.want)
			}
		})
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
	if err := CheckSystemMemory(); err != nil {
		t.Fatalf("this machine's: %v", err)
	}
	if s, err := SystemMemory(0); err != nil || s.Pss != 0 || s.Procs != 0 || s.Shmem < 0 {
		t.Fatalf("this machine's, no job: %+v, %v", s, err)
	}
}

// fakeProc writes a /proc in a temporary directory: a stat for each
// process, "pid (comm) S ppid …", and the smaps_rollup of those in
// rollups.
func fakeProc(t *testing.T, stats map[int]string, rollups map[int]string) string {
	t.Helper()
	dir := t.TempDir()
	write := func(pid int, name, text string) {
		d := filepath.Join(dir, fmt.Sprint(pid))
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for pid, text := range stats {
		write(pid, "stat", text)
	}
	for pid, text := range rollups {
		write(pid, "smaps_rollup", text)
	}
	if err := os.WriteFile(filepath.Join(dir, "meminfo"), []byte(readFixture(t, "meminfo")), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestTreePss(t *testing.T) {
	pss := func(kb int) string { return fmt.Sprintf("Rss: %d kB\nPss: %d kB\n", 3*kb, kb) }
	// 100 is the launcher; 101 and 102 its ranks, 103 a helper of 101's,
	// 104 a rank that exited (no smaps_rollup left), 105 one that exited
	// before its stat was read (a directory without files); 200 is
	// someone else's, with a broken smaps_rollup that must not be read.
	stats := map[int]string{
		1:   "1 (init) S 0 1 1",
		100: "100 (commtune) S 1 100 100",
		101: "101 (rank) S 100 100 100",
		102: "102 (a (b) c) R 100 100 100",
		103: "103 (helper) S 101 100 100",
		104: "104 (rank) Z 100 100 100",
		200: "200 (other) S 1 200 200",
	}
	rollups := map[int]string{1: pss(5), 100: pss(40000), 101: pss(1000), 102: pss(2000), 103: pss(30), 200: "garbage"}
	proc := fakeProc(t, stats, rollups)
	if err := os.Mkdir(filepath.Join(proc, "105"), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		root      int
		wantPss   int64
		wantProcs int
	}{
		{100, 3030 << 10, 3},
		{101, 30 << 10, 1},
		{103, 0, 0},
		{999, 0, 0},
	}
	for _, tc := range tests {
		got, procs, err := TreePss(proc, tc.root)
		if err != nil || got != tc.wantPss || procs != tc.wantProcs {
			t.Errorf("TreePss(root %d) = %d, %d, %v; want %d over %d processes", tc.root, got, procs, err, tc.wantPss, tc.wantProcs)
		}
	}

	// Eight processes of 1 EiB each are more than an int64 holds.
	huge, hugeRollups := map[int]string{100: stats[100]}, map[int]string{}
	for pid := 101; pid <= 108; pid++ {
		huge[pid] = fmt.Sprintf("%d (rank) S 100 100 100", pid)
		hugeRollups[pid] = pss(maxKB)
	}
	broken := func(stats, rollups map[int]string) map[int]string {
		m := map[int]string{}
		for k, v := range stats {
			m[k] = v
		}
		for k, v := range rollups {
			m[k] = v
		}
		return m
	}
	for _, tc := range []struct {
		name            string
		stats, rollups  map[int]string
		wantErr, wantAt string
	}{
		{"a rank's smaps_rollup", stats, broken(rollups, map[int]string{102: readFixture(t, "smaps_rollup-malformed")}),
			`"12x5" is not a size in kB`, "102/smaps_rollup: smaps_rollup line 3"},
		{"a stat", broken(stats, map[int]string{200: "200 other S 1"}), rollups, "no ')'", "200/stat: stat"},
		{"a sum that overflows", huge, hugeRollups, "the sum of Pss overflows", "smaps_rollup"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := TreePss(fakeProc(t, tc.stats, tc.rollups), 100)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), tc.wantAt) {
				t.Fatalf("TreePss: %v; want an error with %q at %q", err, tc.wantErr, tc.wantAt)
			}
		})
	}
	if _, _, err := TreePss(filepath.Join(proc, "absent"), 100); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("no proc: %v", err)
	}
}

// TestTreePssSystem finds a child of this process in the real /proc.
func TestTreePssSystem(t *testing.T) {
	if err := CheckSystemMemory(); err != nil {
		t.Skip(err)
	}
	sleep := exec.Command("sleep", "30")
	if err := sleep.Start(); err != nil {
		t.Skip(err)
	}
	defer func() {
		sleep.Process.Kill()
		sleep.Wait()
	}()
	s, err := SystemMemory(os.Getpid())
	if err != nil || s.Procs != 1 || s.Pss <= 0 || s.Pss > 64<<20 {
		t.Fatalf("SystemMemory with a sleep below = %+v, %v; want its Pss", s, err)
	}
}

// TestThreadCPU checks a thread's processor time grows as it works and
// not as it sleeps.
func TestThreadCPU(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	start, ok := threadCPU(nil)
	if !ok {
		t.Skipf("no %s", threadSchedstat)
	}
	time.Sleep(50 * time.Millisecond)
	slept, _ := threadCPU(nil)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		if now, _ := threadCPU(nil); now-slept >= 20*time.Millisecond {
			// Linux counts a running thread's time at its scheduler's
			// ticks: a sleep may show a few ms.
			if slept-start > 10*time.Millisecond {
				t.Errorf("sleeping 50 ms took %v of processor time", slept-start)
			}
			return
		}
	}
	t.Fatal("10 s of spinning did not show 20 ms of processor time")
}

// formatMemInfo writes m the way the kernel does.
func formatMemInfo(m MemInfo) string {
	return fmt.Sprintf("MemTotal: 1000 kB\nShmem: %d kB\n", m.Shmem>>10)
}

// formatSmapsRollup writes r the way the kernel does.
func formatSmapsRollup(r SmapsRollup) string {
	return fmt.Sprintf("00400000-7fff0000 ---p 00000000 00:00 0  [rollup]\nRss: %d kB\nPss: %d kB\nPss_Anon: 4 kB\n", r.Pss>>10, r.Pss>>10)
}

// checkKB fails t unless v is a size parseKB could have returned.
func checkKB(t *testing.T, text []byte, v int64, parsed any) {
	if v < 0 || v > maxKB<<10 || v%1024 != 0 {
		t.Fatalf("parsing %q gave %+v", text, parsed)
	}
}

// FuzzParseMemInfo checks ParseMemInfo never panics, and that what it
// accepts is within bounds and reads back the same once written out. The
// seed corpus is testdata/fuzz/FuzzParseMemInfo (see TestMemFuzzSeeds).
func FuzzParseMemInfo(f *testing.F) {
	f.Fuzz(func(t *testing.T, text []byte) {
		m, err := ParseMemInfo(text)
		if err != nil {
			return
		}
		checkKB(t, text, m.Shmem, m)
		if back, err := ParseMemInfo([]byte(formatMemInfo(m))); err != nil || back != m {
			t.Fatalf("ParseMemInfo(%q) = %+v; written out and read back: %+v, %v", text, m, back, err)
		}
	})
}

// FuzzParseSmapsRollup is FuzzParseMemInfo for ParseSmapsRollup; its
// seed corpus is testdata/fuzz/FuzzParseSmapsRollup.
func FuzzParseSmapsRollup(f *testing.F) {
	f.Fuzz(func(t *testing.T, text []byte) {
		r, err := ParseSmapsRollup(text)
		if err != nil {
			return
		}
		checkKB(t, text, r.Pss, r)
		if back, err := ParseSmapsRollup([]byte(formatSmapsRollup(r))); err != nil || back != r {
			t.Fatalf("ParseSmapsRollup(%q) = %+v; written out and read back: %+v, %v", text, r, back, err)
		}
	})
}

// FuzzParseStatPPID checks parseStatPPID never panics, and that a parent
// it accepts reads back the same; its seed corpus is
// testdata/fuzz/FuzzParseStatPPID.
func FuzzParseStatPPID(f *testing.F) {
	f.Fuzz(func(t *testing.T, text []byte) {
		ppid, err := parseStatPPID(text)
		if err != nil {
			return
		}
		if back, err := parseStatPPID([]byte(fmt.Sprintf("1 (x) S %d 1", ppid))); ppid < 0 || err != nil || back != ppid {
			t.Fatalf("parseStatPPID(%q) = %d; written out and read back: %d, %v", text, ppid, back, err)
		}
	})
}

// TestMemFuzzSeeds keeps testdata/fuzz/FuzzParseMemInfo,
// FuzzParseSmapsRollup and FuzzParseStatPPID in step with the fixtures
// and a few near misses (go test -run MemFuzzSeeds -rewrite-seeds).
func TestMemFuzzSeeds(t *testing.T) {
	corpora := map[string][]string{
		"FuzzParseMemInfo": {
			readFixture(t, "meminfo"),
			readFixture(t, "meminfo-malformed"),
			readFixture(t, "meminfo-truncated"),
			formatMemInfo(MemInfo{1 << 11}),
			"MemTotal: 1125899906842624 kB\nShmem: 1125899906842624 kB\n",
			"MemTotal:\x00 1 kB\nShmem: 1 kB\nShmem: 2 kB\n",
			"",
		},
		"FuzzParseSmapsRollup": {
			readFixture(t, "smaps_rollup"),
			readFixture(t, "smaps_rollup-malformed"),
			formatSmapsRollup(SmapsRollup{1 << 20}),
			"Pss: 1125899906842624 kB\n",
			"Pss_Anon: 1 kB\nPss:\t2\tkB\r\nPss: 3 kB",
			"",
		},
		"FuzzParseStatPPID": {
			"22518 (cat) R 22513 22513 21451 0 -1 4194304 99 0 0 0\n",
			"7 (a) b) S (c) R 41 7 7\n",
			"7 (x) S 99999999999999999999 7",
			"7 (mpirun",
			"",
		},
	}
	for target, texts := range corpora {
		var seeds []fuzzseed.Seed
		for i, s := range texts {
			seeds = append(seeds, fuzzseed.Seed{Name: fmt.Sprintf("seed-%02d", i), Values: []any{[]byte(s)}})
		}
		fuzzseed.Sync(t, target, seeds)
	}
}

// scripted returns a MemReader that serves samples in turn, then the last
// one again, closing served once all have been read, and records the
// roots it was asked for.
func scripted(samples ...MemSample) (MemReader, chan struct{}, *[]int) {
	served := make(chan struct{})
	var roots []int
	i := 0
	return func(root int) (MemSample, error) {
		s := samples[min(i, len(samples)-1)]
		roots = append(roots, root)
		if i++; i == len(samples) {
			close(served)
		}
		return s, nil
	}, served, &roots
}

func TestMemWatch(t *testing.T) {
	ms := func(pss int64, procs int, shmem int64) MemSample {
		return MemSample{Pss: pss, Procs: procs, Shmem: shmem}
	}
	tests := []struct {
		name    string
		samples []MemSample // the idle one first
		want    MemPeak     // but Samples and SampleTime, which depend on timing
	}{
		{"rises and falls", []MemSample{ms(0, 0, 10), ms(1500, 2, 10), ms(3000, 4, 50), ms(1200, 1, 10)}, MemPeak{Pss: 3000, Procs: 4, Shmem: 40}},
		{"peaks apart", []MemSample{ms(0, 0, 10), ms(1000, 4, 500), ms(4000, 3, 10), ms(900, 1, 5)}, MemPeak{Pss: 4000, Procs: 4, Shmem: 490}},
		{"shm below idle", []MemSample{ms(0, 0, 10), ms(800, 1, 5), ms(0, 0, 0)}, MemPeak{Pss: 800, Procs: 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			read, served, roots := scripted(tc.samples...)
			w, err := WatchMemory(read, time.Millisecond)
			if err != nil {
				t.Fatal(err)
			}
			w.Root(42)
			<-served
			got, err := w.Stop()
			if err != nil || got.Pss != tc.want.Pss || got.Procs != tc.want.Procs || got.Shmem != tc.want.Shmem ||
				got.Samples < len(tc.samples)-1 || got.SampleCPU < 0 {
				t.Fatalf("Stop = %+v, %v; want %+v after at least %d samples", got, err, tc.want, len(tc.samples)-1)
			}
			if (*roots)[0] != 0 || (*roots)[len(*roots)-1] != 42 {
				t.Errorf("roots read %v: want 0 for the idle sample, the launcher's last", *roots)
			}
		})
	}
}

func TestMemWatchErrors(t *testing.T) {
	broken := errors.New("no meminfo")
	if _, err := WatchMemory(func(int) (MemSample, error) { return MemSample{}, broken }, 0); !errors.Is(err, broken) {
		t.Errorf("idle sample failing: %v", err)
	}
	calls := 0
	w, err := WatchMemory(func(int) (MemSample, error) {
		if calls++; calls > 2 {
			return MemSample{}, broken
		}
		return MemSample{Pss: 7}, nil
	}, time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	if p, err := w.Stop(); !errors.Is(err, broken) || p.Samples != 1 || p.Pss != 7 {
		t.Errorf("a sample failing: %+v, %v; want 1 sample and the error", p, err)
	}
}

func TestMeasureStartup(t *testing.T) {
	// The job's processes are seen once the launch names its launcher.
	read := func(root int) (MemSample, error) {
		if root != 42 {
			return MemSample{Shmem: 8 << 20}, nil
		}
		return MemSample{Pss: 30 << 20, Procs: 3, Shmem: 10 << 20}, nil
	}
	times := StartupTimes{Wall: 50 * time.Millisecond, FirstCollective: 40 * time.Millisecond}
	s, err := MeasureStartup(read, time.Millisecond, func(root func(int)) (StartupTimes, error) {
		root(42)
		time.Sleep(20 * time.Millisecond)
		return times, nil
	})
	if err != nil || s.StartupTimes != times || s.Mem.Pss != 30<<20 || s.Mem.Procs != 3 || s.Mem.Shmem != 2<<20 {
		t.Fatalf("MeasureStartup = %+v, %v", s, err)
	}
	failed := errors.New("launcher failed")
	if _, err := MeasureStartup(read, time.Millisecond, func(func(int)) (StartupTimes, error) { return StartupTimes{}, failed }); !errors.Is(err, failed) {
		t.Fatalf("a failed launch: %v", err)
	}
}

func TestParseStartupAlltoall(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
		ok   bool
	}{{"", 0, true}, {"0", 0, true}, {"16384", 16384, true}, {"12", 0, false}, {"-8", 0, false}, {"16K", 0, false}} {
		got, err := ParseStartupAlltoall(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParseStartupAlltoall(%q) = %d, %v", tc.in, got, err)
		}
		if err != nil && !strings.Contains(err.Error(), EnvStartupAlltoall) {
			t.Errorf("ParseStartupAlltoall(%q): %v does not name %s", tc.in, err, EnvStartupAlltoall)
		}
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
	for _, tc := range []struct{ n, alltoall int }{{1, 0}, {2, 0}, {5, 0}, {5, 24}, {3, 16 << 10}} {
		n := tc.n
		start := time.Now()
		var rep *StartupRank
		err := commtune.Local(n, func(c *commtune.Comm) error {
			r, err := Startup(context.Background(), c, start, tc.alltoall)
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
	sample := func(wall, first time.Duration, pss, shm int64) StartupSample {
		return StartupSample{StartupTimes{wall, first}, MemPeak{Pss: pss, Procs: 8, Shmem: shm, SampleCPU: time.Millisecond}}
	}
	ours := StartupSideOf([]StartupSample{
		sample(300*time.Millisecond, 200*time.Millisecond, 40<<20, 8<<20),
		sample(500*time.Millisecond, 400*time.Millisecond, 60<<20, 12<<20),
		sample(400*time.Millisecond, 250*time.Millisecond, 50<<20, 10<<20),
	}, nil)
	if ours.Launches != 3 || ours.WallS != 0.4 || ours.FirstCollectiveS != 0.25 || ours.PeakPssMiB != 50 || ours.ShmMiB != 10 ||
		ours.Procs != 8 || ours.SampleCPUMS != 1 || ours.Error != "" {
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
	if !strings.Contains(lines[0], "launcher's own left out on both sides") {
		t.Errorf("title does not say which processes count: %s", lines[0])
	}
	for _, want := range []string{"peak Pss(MiB)", "openmpi wall(s)", "peak ratio"} {
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
