package tune

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestDecisionsRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "x.halo.json")
	got, err := LoadDecisions(path, "p1")
	if err != nil || len(got) != 0 {
		t.Fatalf("missing file: %v, %v; want no decision, no error", got, err)
	}
	a := Decision{Winner: "SendIrecv_pair_ddt", Seconds: 1.5e-4, Method: MethodBrute, Calls: 200, Selections: 1,
		Means: map[string]float64{"SendIrecv_pair_ddt": 1.5e-4, "Put_aao_pack": 2e-4}, Explain: []string{"why"}, At: time.Unix(1e9, 0).UTC()}
	b := Decision{Winner: "Get_aao_pack", Seconds: 3e-3, Method: MethodHypothesis, Calls: 80, Selections: 2, At: time.Unix(2e9, 0).UTC()}
	for _, kd := range []struct {
		key string
		d   Decision
	}{{"k1", a}, {"k2", b}, {"k1", b}} {
		if err := SaveDecision(path, "p1", kd.key, kd.d); err != nil {
			t.Fatal(err)
		}
	}
	got, err = LoadDecisions(path, "p1")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got["k1"].Winner != b.Winner || got["k2"].Calls != 80 {
		t.Fatalf("loaded %+v; want k1 replaced by the later decision and k2 kept", got)
	}
	if _, err := LoadDecisions(path, "p2"); !errors.Is(err, ErrForeignState) {
		t.Fatalf("another platform: %v, want ErrForeignState", err)
	}
	if err := SaveDecision(path, "p2", "k3", a); !errors.Is(err, ErrForeignState) {
		t.Fatalf("save over another platform's file: %v, want ErrForeignState", err)
	}
}

func TestDecisionsBad(t *testing.T) {
	for _, tc := range []struct {
		name, data string
		foreign    bool
	}{
		{"not json", "{", false},
		{"other format", `{"format":"commtune-tune/1","platform":"p"}`, true},
		{"other platform", `{"format":"commtune-decisions/1","platform":"q"}`, true},
		{"no winner", `{"format":"commtune-decisions/1","platform":"p","decisions":{"k":{"seconds":1}}}`, false},
		{"zero time", `{"format":"commtune-decisions/1","platform":"p","decisions":{"k":{"winner":"a","seconds":0}}}`, false},
		{"negative mean", `{"format":"commtune-decisions/1","platform":"p","decisions":{"k":{"winner":"a","seconds":1,"means":{"b":-1}}}}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseDecisions([]byte(tc.data), "p")
			want := ErrBadState
			if tc.foreign {
				want = ErrForeignState
			}
			if !errors.Is(err, want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("err %v, want one line wrapping %v", err, want)
			}
		})
	}
	// A corrupt file is replaced by the next save.
	path := filepath.Join(t.TempDir(), "d.json")
	os.WriteFile(path, []byte("garbage"), 0o644)
	if err := SaveDecision(path, "p", "k", Decision{Winner: "a", Seconds: 1}); err != nil {
		t.Fatal(err)
	}
	if m, err := LoadDecisions(path, "p"); err != nil || m["k"].Winner != "a" {
		t.Fatalf("after replacing a corrupt file: %v, %v", m, err)
	}
	if err := SaveDecision(path, "p", "k", Decision{Winner: "a"}); !errors.Is(err, ErrBadState) {
		t.Fatalf("saving a decision without a time: %v", err)
	}
}

func FuzzParseDecisions(f *testing.F) {
	f.Add([]byte(`{"format":"commtune-decisions/1","platform":"p","decisions":{"k":{"winner":"a","seconds":1e-4,"means":{"a":1e-4}}}}`))
	f.Add([]byte(`{"format":"commtune-decisions/1","platform":"p"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ParseDecisions(data, "p")
		if err != nil {
			if !errors.Is(err, ErrBadState) && !errors.Is(err, ErrForeignState) {
				t.Fatalf("error %v wraps neither sentinel", err)
			}
			return
		}
		for k, d := range m {
			if d.check(k) != nil {
				t.Fatalf("accepted an invalid decision %q: %+v", k, d)
			}
		}
	})
}
