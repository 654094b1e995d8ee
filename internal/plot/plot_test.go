package plot

import (
	"bytes"
	"image/png"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"

	"github.com/commtune/commtune/internal/profile"
	"github.com/commtune/commtune/internal/profile/profiletest"
	"github.com/commtune/commtune/internal/testenv"
)

// testProfile has straight-line curves whose crossings are known: on tcp,
// iovec from 1000 B (5000 + x/2 = 5200 + 0.3x), rendezvous from 196000 B,
// aggregation below 30000 B; on shm, rendezvous by copy from 102000 B
// and by cachefree from 1200000 B (2000 + x/30 = 12000 + x/40).
func testProfile() *profile.Profile {
	eager, all, pairs := profiletest.Sizes(1, 512<<10), profiletest.Sizes(1, 16<<20), profiletest.Sizes(1, 256<<10)
	return &profile.Profile{Version: profile.Version,
		Transports: map[string]*profile.Transport{
			"tcp": {MaxEager: 512 << 10, Methods: map[string]profile.Curve{
				profile.EagerCopy:  profiletest.Line(eager, 5000, 0.5),
				profile.EagerIovec: profiletest.Line(eager, 5200, 0.3),
				profile.Rendezvous: profiletest.Line(all, 15000, 0.25),
				profile.Aggregated: profiletest.Line(pairs, 6000, 1.1),
				profile.TwoPackets: profiletest.Line(pairs, 9000, 1.0),
			}},
			"shm": {MaxEager: 512 << 10, Methods: map[string]profile.Curve{
				profile.EagerCopy:                  profiletest.Line(eager, 300, 0.05),
				profile.EagerIovec:                 profiletest.Line(eager, 300, 0.05),
				profile.RendezvousVia("copy"):      profiletest.Line(all, 2000, 1.0/30),
				profile.RendezvousVia("cma"):       profiletest.Line(all, 8000, 1.0/32),
				profile.RendezvousVia("cachefree"): profiletest.Line(all, 12000, 1.0/40),
			}},
		},
		Host: map[string]profile.Curve{profile.Memcpy: profiletest.Line(all, 20, 0.0001)},
	}
}

// noSwitchProfile is one transport on which one method of each pair is
// faster everywhere: eager-copy than eager-iovec (no iovec threshold), two
// packets than one aggregated (no aggregation threshold).
func noSwitchProfile() *profile.Profile {
	eager, all, pairs := profiletest.Sizes(1, 64<<10), profiletest.Sizes(1, 1<<20), profiletest.Sizes(1, 64<<10)
	return &profile.Profile{Version: profile.Version,
		Transports: map[string]*profile.Transport{
			"tcp": {MaxEager: 64 << 10, Methods: map[string]profile.Curve{
				profile.EagerCopy:  profiletest.Line(eager, 5000, 0.3),
				profile.EagerIovec: profiletest.Line(eager, 5200, 0.5),
				profile.Rendezvous: profiletest.Line(all, 15000, 0.25),
				profile.Aggregated: profiletest.Line(pairs, 9000, 1.1),
				profile.TwoPackets: profiletest.Line(pairs, 6000, 1.0),
			}},
		},
	}
}

func TestWrite(t *testing.T) {
	testenv.SkipUnderRace(t, "drawing figures in one goroutine")
	tests := []struct {
		name    string
		profile *profile.Profile
		want    []string // file names, in order
	}{
		{"two transports", testProfile(), []string{
			"shm-iovec", "shm-rendezvous", "shm-large", // shm has no aggregation samples
			"tcp-iovec", "tcp-rendezvous", "tcp-aggregation",
		}},
		{"no switch", noSwitchProfile(), []string{"tcp-iovec", "tcp-rendezvous", "tcp-aggregation"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "plots") // Write creates it
			files, err := Write(dir, tc.profile)
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			for _, name := range tc.want {
				want = append(want, filepath.Join(dir, name+".png"), filepath.Join(dir, name+".svg"))
			}
			var got []string
			for _, f := range files {
				got = append(got, f.Path)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("wrote\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			for _, f := range files {
				checkImage(t, f)
			}
		})
	}
}

// checkImage checks that f is on disk as reported and is the image its
// extension says.
func checkImage(t *testing.T, f File) {
	t.Helper()
	data, err := os.ReadFile(f.Path)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) == 0 || int64(len(data)) != f.Size {
		t.Fatalf("%s: %d bytes on disk, reported %d", f.Path, len(data), f.Size)
	}
	switch filepath.Ext(f.Path) {
	case ".png":
		img, err := png.Decode(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("%s: %v", f.Path, err)
		}
		// 6×4 inches at pngDPI, give or take a pixel of rounding.
		b := img.Bounds()
		if w, h := b.Dx(), b.Dy(); w < 6*pngDPI-1 || w > 6*pngDPI+1 || h < 4*pngDPI-1 || h > 4*pngDPI+1 {
			t.Errorf("%s: %d×%d pixels, want about %d×%d", f.Path, w, h, 6*pngDPI, 4*pngDPI)
		}
	case ".svg":
		if !bytes.Contains(data, []byte("<svg")) {
			t.Errorf("%s: no <svg element", f.Path)
		}
	default:
		t.Errorf("%s: unexpected extension", f.Path)
	}
}

func TestDecisionFigure(t *testing.T) {
	memcpy := testProfile().Host[profile.Memcpy]
	tests := []struct {
		name      string
		profile   *profile.Profile
		transport string
		decision  string
		title     string
		mark      string // label of the one mark; "" for none
	}{
		{"crossing", testProfile(), "tcp", "iovec", "tcp: iovec threshold 1000", "threshold 1000"},
		{"rendezvous", testProfile(), "tcp", "rendezvous", "tcp: rendezvous threshold 191.4K", "threshold 191.4K"},
		{"below wins", noSwitchProfile(), "tcp", "iovec", "tcp: iovec threshold: no switch in range", ""},
		{"above wins", noSwitchProfile(), "tcp", "aggregation", "tcp: aggregation threshold: no switch in range", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tu, err := tc.profile.Tune(tc.transport, nil)
			if err != nil {
				t.Fatal(err)
			}
			d, ok := tu.Decision(tc.decision)
			if !ok {
				t.Fatalf("no %s decision", tc.decision)
			}
			f := decisionFigure(tc.transport, d, memcpy)
			if f.title != tc.title {
				t.Errorf("title %q, want %q", f.title, tc.title)
			}
			switch {
			case tc.mark == "" && len(f.marks) != 0:
				t.Errorf("marks %v, want none", f.marks)
			case tc.mark != "" && (len(f.marks) != 1 || f.marks[0].label != tc.mark || f.marks[0].size != d.Size):
				t.Errorf("marks %v, want one at %d labelled %q", f.marks, d.Size, tc.mark)
			}
			if !strings.Contains(f.caption, d.Rule) {
				t.Errorf("caption %q lacks the rule %q", f.caption, d.Rule)
			}
			labels := []string{d.Below, d.Above, "memcpy (plain copy, reference)"}
			if len(f.series) != len(labels) {
				t.Fatalf("%d series, want %d", len(f.series), len(labels))
			}
			for i, s := range f.series {
				if s.label != labels[i] {
					t.Errorf("series %d is %q, want %q", i, s.label, labels[i])
				}
				// Every curve stays within the sizes compared: the
				// reference too, since the methods' curves are clipped.
				if lo, hi := s.curve.Span(); lo < d.Lo || hi > d.Hi {
					t.Errorf("%s spans %d..%d, outside %d..%d", s.label, lo, hi, d.Lo, d.Hi)
				}
			}
		})
	}
}

func TestLargeFigure(t *testing.T) {
	p := testProfile()
	tu, err := p.Tune("shm", nil)
	if err != nil {
		t.Fatal(err)
	}
	f := largeFigure("shm", tu, p.Transports["shm"], nil)
	if f == nil {
		t.Fatal("no large figure for shm")
	}
	var labels []string
	for _, s := range f.series {
		labels = append(labels, s.label)
	}
	if want := []string{"rendezvous/copy", "rendezvous/cma", "rendezvous/cachefree"}; !slices.Equal(labels, want) {
		t.Errorf("series %v, want %v", labels, want)
	}
	want := []mark{{size: 102000, label: "copy from 99.6K", dotted: true}, {size: 1200000, label: "cachefree from 1.1M"}}
	if !slices.Equal(f.marks, want) {
		t.Errorf("marks %v, want %v", f.marks, want)
	}

	tcp, err := p.Tune("tcp", nil)
	if err != nil {
		t.Fatal(err)
	}
	if f := largeFigure("tcp", tcp, p.Transports["tcp"], nil); f != nil {
		t.Errorf("a large figure for tcp, whose rendezvous is one method: %q", f.title)
	}
}

// A transport the profile cannot tune is an error, and the others are
// drawn all the same.
func TestWriteUntunable(t *testing.T) {
	testenv.SkipUnderRace(t, "drawing figures in one goroutine")
	p := testProfile()
	p.Transports["inproc"] = &profile.Transport{Methods: map[string]profile.Curve{profile.Rendezvous: profiletest.Line(profiletest.Sizes(1, 1024), 100, 1)}}
	files, err := Write(t.TempDir(), p)
	if err == nil || !strings.Contains(err.Error(), "inproc") {
		t.Errorf("error %v, want one naming inproc", err)
	}
	if len(files) != 12 {
		t.Errorf("%d files written, want the other transports' 12", len(files))
	}
}

// A figure with nothing to draw says so rather than panicking on a log
// axis with no range.
func TestEmptyFigure(t *testing.T) {
	f := &figure{name: "empty", title: "empty", series: []series{{label: "none", color: colorOf(0)}}}
	if _, err := f.encode("png"); err != errNoData {
		t.Errorf("encode: %v, want %v", err, errNoData)
	}
	// One sample is still a figure: the axes widen around it.
	f.series[0].curve = profile.Curve{{Size: 1, Median: 100, P25: 100, P75: 100, Reps: 1}}
	if _, err := f.encode("svg"); err != nil {
		t.Errorf("one sample: %v", err)
	}
	if _, err := f.encode("gif"); err == nil {
		t.Error("encoded an unsupported format")
	}
}

func TestSizeTicks(t *testing.T) {
	tests := []struct {
		lo, hi float64
		want   []string // labels, in order
	}{
		{1, 16 << 20, []string{"1", "4", "16", "64", "256", "1K", "4K", "16K", "64K", "256K", "1M", "4M", "16M"}},
		{1, 512 << 10, []string{"1", "4", "16", "64", "256", "1K", "4K", "16K", "64K", "256K"}},
		{1, 1 << 40, []string{"1", "32", "1K", "32K", "1M", "32M", "1G", "32G", "1024G"}},
		{64, 256, []string{"64", "128", "256"}},
		{100, 120, []string{"100", "120"}}, // no power of two: the ends
	}
	for _, tc := range tests {
		var got []string
		for _, tk := range (sizeTicks{}).Ticks(tc.lo, tc.hi) {
			if tk.Label != "" {
				got = append(got, tk.Label)
			}
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("Ticks(%v, %v) labels %v, want %v", tc.lo, tc.hi, got, tc.want)
		}
	}
}

func TestTimeTicks(t *testing.T) {
	tests := []struct {
		lo, hi float64
		want   []string
	}{
		{0.02, 600, []string{"0.1", "1", "10", "100"}},
		{3, 40, []string{"5", "10", "20"}},
		{0.31, 0.42, []string{"0.4"}}, // within one multiple: as many as there are
		{0.25, 0.45, []string{"0.3", "0.4"}},
	}
	for _, tc := range tests {
		var got []string
		for _, tk := range (timeTicks{}).Ticks(tc.lo, tc.hi) {
			if tk.Label != "" {
				got = append(got, tk.Label)
			}
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("Ticks(%v, %v) labels %v, want %v", tc.lo, tc.hi, got, tc.want)
		}
	}
}

func TestWrap(t *testing.T) {
	sty := text.Style{Font: font.From(gplot.DefaultFont, 8), Handler: gplot.DefaultTextHandler}
	w := sty.Width("a rule of about forty characters, wide.")
	long := strings.Repeat("two crossings, kept the least regret area; ", 10)
	tests := []struct {
		name  string
		in    string
		lines int
		last  string // suffix of the last line
	}{
		{"empty", "", 0, ""},
		{"short", "crossing at 1K", 1, "crossing at 1K"},
		{"fits", "crossing at 140.6K; regret 1.2%·octave; earliest switch within 5%·octave of the best", 3, "of the best"},
		{"shortened", long, 3, " …"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			lines := wrap(tc.in, sty, w, 3)
			if len(lines) != tc.lines {
				t.Fatalf("%d lines %q, want %d", len(lines), lines, tc.lines)
			}
			for _, l := range lines {
				if sty.Width(l) > w+vg.Points(0.01) {
					t.Errorf("line %q wider than %v", l, w)
				}
			}
			if tc.lines > 0 && !strings.HasSuffix(lines[len(lines)-1], tc.last) {
				t.Errorf("last line %q, want it to end in %q", lines[len(lines)-1], tc.last)
			}
		})
	}
}

func TestFileName(t *testing.T) {
	for in, want := range map[string]string{
		"shm":          "shm",
		"tcp rails=1":  "tcp_rails_1",
		"../../etc/x":  ".._.._etc_x",
		"":             "_",
		"rendezvous/a": "rendezvous_a",
	} {
		if got := fileName(in); got != want {
			t.Errorf("fileName(%q) = %q, want %q", in, got, want)
		}
	}
}
