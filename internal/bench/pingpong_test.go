package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/commtune/commtune"
	"github.com/commtune/commtune/internal/config"
	"github.com/commtune/commtune/internal/control"
)

func TestIterations(t *testing.T) {
	if Iterations(8, 1000) != 1000 || Iterations(64<<20, 1000) != 20 || Iterations(1<<20, 1000) != 256 {
		t.Fatal(Iterations(8, 1000), Iterations(64<<20, 1000), Iterations(1<<20, 1000))
	}
}

// TestPingPongLocal runs the benchmark on goroutine ranks with the TCP
// baseline and checks the report's shape.
func TestPingPongLocal(t *testing.T) {
	var res []Result
	var base []Baseline
	var tap control.Tap
	err := commtune.Local(2, func(c *commtune.Comm) error {
		r, b, err := PingPong(context.Background(), c, tap.Of(c.Rank()), PingPongConfig{Sizes: []int{8, 1 << 20}, Iters: 30, Baseline: BaselineRawTCP})
		if c.Rank() == 0 {
			res, base = r, b
		}
		return err
	}, config.WithTap(&tap))
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 2 || len(base) != 1 || res[1].Bytes != 1<<20 || res[0].LatencyUS <= 0 || base[0].Results[1].BandwidthMBps <= 0 {
		t.Fatalf("results %+v baseline %+v", res, base)
	}
	rep := &Report{Bench: "pingpong", Transport: "inproc", Method: "auto", Ranks: 2, Results: res, Baselines: base}
	var js bytes.Buffer
	if err := WriteJSON(&js, rep); err != nil {
		t.Fatal(err)
	}
	var back map[string]any
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || back["bench"] != "pingpong" || strings.Count(js.String(), "\n") != 1 {
		t.Fatalf("json %q: %v", js.String(), err)
	}
	var tbl bytes.Buffer
	if err := WriteTable(&tbl, rep); err != nil || !strings.Contains(tbl.String(), "1M") {
		t.Fatalf("table %q: %v", tbl.String(), err)
	}
}

func TestCopyBaseline(t *testing.T) {
	var base []Baseline
	var tap control.Tap
	err := commtune.Local(2, func(c *commtune.Comm) error {
		_, b, err := PingPong(context.Background(), c, tap.Of(c.Rank()), PingPongConfig{Sizes: []int{8, 4096, 1 << 20}, Iters: 20, Baseline: BaselineCopy})
		if c.Rank() == 0 {
			base = b
		}
		return err
	}, config.WithTap(&tap))
	if err != nil {
		t.Fatal(err)
	}
	if len(base) != 2 || base[0].Name != "copy-hot" || base[1].Name != "copy-cold" || base[1].Results[2].BandwidthMBps <= 0 {
		t.Fatalf("baselines %+v", base)
	}
}

// TestWriteMethodTable: one column per method, and beside auto's the path
// its policy took at each size, so the table shows auto following its rule.
func TestWriteMethodTable(t *testing.T) {
	rep := func(method string, mbps float64, paths ...string) *Report {
		r := &Report{Bench: "pingpong", Transport: "shm", Method: method, Ranks: 2}
		for i, size := range []int{64 << 10, 4 << 20} {
			res := Result{Bytes: size, MeanUS: float64(size) / mbps}
			if i < len(paths) {
				res.Path = paths[i]
			}
			r.Results = append(r.Results, res)
		}
		return r
	}
	var b bytes.Buffer
	if err := WriteMethodTable(&b, []*Report{rep("auto", 7000, "rendezvous/copy", "rendezvous/cachefree"), rep("copy", 6000), rep("cma", 5000)}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	want := [][]string{
		{"size", "auto", "auto", "took", "copy", "cma"},
		{"64K", "7000", "rendezvous/copy", "6000", "5000"},
		{"4M", "7000", "rendezvous/cachefree", "6000", "5000"},
	}
	if len(lines) != 4 {
		t.Fatalf("table:\n%s", b.String())
	}
	for i, w := range want {
		if got := strings.Fields(lines[i+1]); !slices.Equal(got, w) {
			t.Errorf("line %d = %q, want %q", i+1, got, w)
		}
	}
}
