package tracereport

import (
	"bytes"
	"fmt"
	"image"
	_ "image/png" // image.Decode reads the PNGs
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/commtune/commtune/internal/testenv"
	"github.com/commtune/commtune/internal/trace"
)

func TestReportPlot(t *testing.T) {
	noAlg := twoRanks()
	for _, spans := range noAlg.Spans {
		for i := range spans {
			spans[i].Alg = ""
		}
	}
	tests := []struct {
		name  string
		job   *trace.Job
		files []string
	}{
		{"two ranks", twoRanks(), []string{"timeline", "ops-per-rank", "algorithms"}},
		{"no algorithm named", noAlg, []string{"timeline", "ops-per-rank"}},
		{"many operations and lanes", manyOps(), []string{"timeline", "ops-per-rank", "algorithms"}},
	}
	for i, tc := range tests {
		for _, format := range []string{"png", "svg"} {
			t.Run(tc.name+"/"+format, func(t *testing.T) {
				if format == "png" && i > 0 && testenv.Reduced() {
					// Rasterizing takes seconds a figure under the race
					// detector; the first case's PNGs are drawn all the same.
					t.Skip("PNGs of one case only in a reduced run")
				}
				dir := filepath.Join(t.TempDir(), "figures") // created by Plot
				paths, err := Plot(tc.job, Summarize(tc.job, false), dir, format)
				if err != nil {
					t.Fatal(err)
				}
				var want []string
				for _, f := range tc.files {
					want = append(want, filepath.Join(dir, f+"."+format))
				}
				if fmt.Sprint(paths) != fmt.Sprint(want) {
					t.Fatalf("Plot wrote %v, want %v", paths, want)
				}
				for _, p := range paths {
					checkImage(t, p, format)
				}
			})
		}
	}
}

// checkImage checks that path holds a whole image in format.
func checkImage(t *testing.T, path, format string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	switch format {
	case "png":
		img, kind, err := image.Decode(bytes.NewReader(data))
		if err != nil || kind != "png" {
			t.Fatalf("%s: %v (%s)", path, err, kind)
		}
		if b := img.Bounds(); b.Dx() < 900 || b.Dy() < 500 {
			t.Fatalf("%s: %v pixels", path, b)
		}
	case "svg":
		if !bytes.HasPrefix(data, []byte("<?xml")) || !bytes.Contains(data, []byte("<svg")) || !bytes.HasSuffix(bytes.TrimSpace(data), []byte("</svg>")) {
			t.Fatalf("%s: not a whole SVG (%d bytes)", path, len(data))
		}
	}
}

// manyOps is a job of 3 ranks calling 15 operations, more than the
// palette has colours, on 3 lanes, each choosing among algorithms.
func manyOps() *trace.Job {
	j := &trace.Job{ID: "many"}
	for r := range 3 {
		j.Ranks = append(j.Ranks, trace.RankInfo{Job: "many", Rank: r, Size: 3, StartNs: int64(r), EndNs: 2e6})
		var spans []trace.Span
		for i := range 300 {
			op := fmt.Sprintf("Op%02d", i%15)
			s := sp(op, "", int64(i)*6000, int64(i)*6000+int64(1000*(1+i%15)), i%3)
			s.Alg, s.By = fmt.Sprintf("%s/alg%d", strings.ToLower(op), i%4), []string{"table", "lottery", "", "learned"}[i%4]
			spans = append(spans, s)
		}
		j.Spans = append(j.Spans, spans)
	}
	return j
}

// TestReportPlotLarge checks that a big trace draws quickly and that the
// figure stays small: spans narrower than a pixel are merged, not drawn
// one by one.
func TestReportPlotLarge(t *testing.T) {
	const ranks = 4
	perRank := testenv.Pick(250_000, 25_000)
	j := &trace.Job{ID: "big"}
	for r := range ranks {
		j.Ranks = append(j.Ranks, trace.RankInfo{Job: "big", Rank: r, Size: ranks, EndNs: int64(perRank) * 1000})
		spans := make([]trace.Span, perRank)
		ops := []string{"Send", "Recv", "Allreduce"}
		for i := range spans {
			spans[i] = sp(ops[i%3], "", int64(i)*1000, int64(i)*1000+600, 0)
			if i%3 == 2 {
				spans[i].Alg, spans[i].By = "allreduce/ring", "table"
			}
		}
		j.Spans = append(j.Spans, spans)
	}
	dir := t.TempDir()
	start := time.Now()
	paths, err := Plot(j, Summarize(j, false), dir, "svg")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d spans drawn in %v", ranks*perRank, time.Since(start))
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Size() > 4<<20 {
			t.Errorf("%s: %d bytes: spans drawn one by one?", p, fi.Size())
		}
	}
}

func TestReportPlotRefuses(t *testing.T) {
	if _, err := Plot(twoRanks(), Summarize(twoRanks(), false), t.TempDir(), "jpeg"); err == nil || !strings.Contains(err.Error(), `"jpeg"`) {
		t.Errorf("jpeg: %v", err)
	}
	empty := &trace.Job{ID: "e", Ranks: []trace.RankInfo{{Size: 1, EndNs: 10}}, Spans: [][]trace.Span{nil}}
	if _, err := Plot(empty, Summarize(empty, false), t.TempDir(), "png"); err == nil || !strings.Contains(err.Error(), "no calls") {
		t.Errorf("no spans: %v", err)
	}
}
