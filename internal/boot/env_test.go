package boot

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/commtune/commtune/internal/auth"
)

// mapEnv turns "NAME=value" lines into a lookup function.
func mapEnv(vars []string) func(string) (string, bool) {
	m := map[string]string{}
	for _, kv := range vars {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

var testKey = strings.Repeat("ab", 32)

// goodEnv is a valid environment for rank 1 of 4 (local 1 of 2); with
// applies changes: "NAME=value" sets, "-NAME" removes.
func goodEnv(with ...string) []string {
	env := map[string]string{
		EnvRank: "1", EnvSize: "4", EnvLocalRank: "1", EnvLocalSize: "2",
		EnvJob: "job-1", EnvBoot: "127.0.0.1:4000", EnvKey: testKey,
	}
	editEnv(env, with...)
	var out []string
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	return out
}

func TestParseEnv(t *testing.T) {
	tests := []struct {
		name     string
		env      []string
		launched bool
		errWants string // substring of the error; "" for none
	}{
		{"not launched", nil, false, ""},
		{"unrelated commtune variable", []string{"COMMTUNE_PROFILE=/tmp/p.json"}, false, ""},
		{"valid", goodEnv(), true, ""},
		{"valid with node", goodEnv("COMMTUNE_NODE=n1"), true, ""},
		{"stray size without rank", goodEnv("-COMMTUNE_RANK"), false, "COMMTUNE_SIZE is set but COMMTUNE_RANK is not"},
		{"stray boot only", []string{"COMMTUNE_BOOT=1.2.3.4:5"}, false, "COMMTUNE_BOOT is set but COMMTUNE_RANK is not"},
		{"missing size", goodEnv("-COMMTUNE_SIZE"), true, "COMMTUNE_SIZE is not set"},
		{"missing local rank", goodEnv("-COMMTUNE_LOCAL_RANK"), true, "COMMTUNE_LOCAL_RANK is not set"},
		{"missing job", goodEnv("-COMMTUNE_JOB"), true, "COMMTUNE_JOB is not set"},
		{"missing boot", goodEnv("-COMMTUNE_BOOT"), true, "COMMTUNE_BOOT is not set"},
		{"missing key", goodEnv("-COMMTUNE_KEY"), true, "COMMTUNE_KEY is not set"},
		{"empty rank", goodEnv("COMMTUNE_RANK="), true, "COMMTUNE_RANK is not set"},
		{"rank not a number", goodEnv("COMMTUNE_RANK=one"), true, `COMMTUNE_RANK="one": want a decimal whole number from 0 to 3`},
		{"rank negative", goodEnv("COMMTUNE_RANK=-1"), true, `COMMTUNE_RANK="-1": want a decimal whole number`},
		{"rank with plus", goodEnv("COMMTUNE_RANK=+1"), true, `COMMTUNE_RANK="+1"`},
		{"rank with space", goodEnv("COMMTUNE_RANK= 1"), true, `COMMTUNE_RANK=" 1"`},
		{"rank hex", goodEnv("COMMTUNE_RANK=0x1"), true, `COMMTUNE_RANK="0x1"`},
		{"rank huge", goodEnv("COMMTUNE_RANK=99999999999999999999"), true, `COMMTUNE_RANK="99999999999999999999"`},
		{"rank equals size", goodEnv("COMMTUNE_RANK=4"), true, `COMMTUNE_RANK="4" with COMMTUNE_SIZE="4": want COMMTUNE_RANK from 0 to 3`},
		{"size zero", goodEnv("COMMTUNE_SIZE=0"), true, `COMMTUNE_SIZE="0": want a decimal whole number from 1 to 1048576`},
		{"size too large", goodEnv("COMMTUNE_SIZE=2000000"), true, `COMMTUNE_SIZE="2000000": want a decimal whole number from 1`},
		{"local size above size", goodEnv("COMMTUNE_LOCAL_SIZE=5"), true, `COMMTUNE_LOCAL_SIZE="5" with COMMTUNE_SIZE="4": want COMMTUNE_LOCAL_SIZE from 1 to 4`},
		{"local size zero", goodEnv("COMMTUNE_LOCAL_SIZE=0"), true, `COMMTUNE_LOCAL_SIZE="0": want a decimal whole number from 1 to 4`},
		{"local rank equals local size", goodEnv("COMMTUNE_LOCAL_RANK=2"), true, `COMMTUNE_LOCAL_RANK="2" with COMMTUNE_LOCAL_SIZE="2": want COMMTUNE_LOCAL_RANK from 0 to 1`},
		{"job with slash", goodEnv("COMMTUNE_JOB=../etc"), true, `COMMTUNE_JOB="../etc": want a job id`},
		{"job too long", goodEnv("COMMTUNE_JOB=" + strings.Repeat("j", 65)), true, "COMMTUNE_JOB"},
		{"boot without port", goodEnv("COMMTUNE_BOOT=localhost"), true, `COMMTUNE_BOOT="localhost": want host:port`},
		{"boot port zero", goodEnv("COMMTUNE_BOOT=localhost:0"), true, `COMMTUNE_BOOT="localhost:0": want host:port, the port from 1 to 65535`},
		{"boot port words", goodEnv("COMMTUNE_BOOT=localhost:http"), true, "the port from 1 to 65535"},
		{"key not hex", goodEnv("COMMTUNE_KEY=zz" + testKey[2:]), true, "COMMTUNE_KEY: want the job secret in hex (job secret is not hexadecimal"},
		{"key too short", goodEnv("COMMTUNE_KEY=abcd"), true, "COMMTUNE_KEY: want the job secret in hex (job secret is 2 bytes"},
		{"node empty", goodEnv("COMMTUNE_NODE="), true, `COMMTUNE_NODE="": want a node name`},
		{"node with space", goodEnv("COMMTUNE_NODE=a b"), true, "COMMTUNE_NODE"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, launched, err := parseEnv(mapEnv(tc.env))
			if launched != tc.launched {
				t.Errorf("launched = %v, want %v", launched, tc.launched)
			}
			if tc.errWants == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.errWants) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.errWants)
			}
			if !errors.Is(err, ErrEnv) {
				t.Fatalf("err = %v does not wrap ErrEnv", err)
			}
			if strings.Contains(err.Error(), testKey[4:]) {
				t.Fatalf("error %q leaks the secret", err)
			}
		})
	}
}

func TestEnvRoundTrip(t *testing.T) {
	secret, _ := auth.NewSecret()
	j := &Job{Rank: 5, Size: 8, LocalRank: 1, LocalSize: 4, ID: "0123abcd", Secret: secret, Node: "node-7"}
	l, launched, err := parseEnv(mapEnv(Env(j, "127.0.0.1:39000")))
	if err != nil || !launched {
		t.Fatalf("parseEnv(Env(j)) = %v, %v", launched, err)
	}
	got := l.job
	if got.Rank != j.Rank || got.Size != j.Size || got.LocalRank != j.LocalRank || got.LocalSize != j.LocalSize ||
		got.ID != j.ID || !bytes.Equal(got.Secret, j.Secret) || got.Node != j.Node || got.Source != SourceCommtune {
		t.Fatalf("round trip: got %+v, want %+v", got, j)
	}
	if l.boot != "127.0.0.1:39000" {
		t.Fatalf("boot = %q", l.boot)
	}
	for _, kv := range Env(j, "x:1") {
		name, _, _ := strings.Cut(kv, "=")
		if !IsLauncherVar(name) {
			t.Errorf("Env writes %s, which IsLauncherVar does not know", name)
		}
	}
}

func TestValidJobID(t *testing.T) {
	tests := map[string]bool{
		"a": true, "0123456789abcdef": true, "job_1.x-y": true, strings.Repeat("j", 64): true,
		"": false, ".": false, "..": false, "a/b": false, "a b": false, "é": false, strings.Repeat("j", 65): false,
	}
	for id, want := range tests {
		if got := ValidJobID(id); got != want {
			t.Errorf("ValidJobID(%q) = %v, want %v", id, got, want)
		}
	}
	id, err := NewJobID()
	if err != nil || !ValidJobID(id) {
		t.Fatalf("NewJobID = %q, %v", id, err)
	}
}

func TestDiscoverSingleton(t *testing.T) {
	j, err := discover(testCtx(t), mapEnv(nil))
	if err != nil {
		t.Fatal(err)
	}
	if j.Rank != 0 || j.Size != 1 || j.LocalRank != 0 || j.LocalSize != 1 || j.KV != nil ||
		j.Source != SourceSingleton || len(j.Secret) < 16 || !ValidJobID(j.ID) || j.Node == "" {
		t.Fatalf("singleton job = %+v", j)
	}
	if err := j.Close(); err != nil {
		t.Fatalf("Close of a singleton: %v", err)
	}
}

func TestDiscoverLaunched(t *testing.T) {
	s := startServer(t, 2, defaultLimits)
	ctx := testCtx(t)
	base := &Job{Size: 2, LocalSize: 2, ID: "test", Secret: s.secret, Node: "n"}
	jobs := make([]*Job, 2)
	for r := range 2 {
		jr := *base
		jr.Rank, jr.LocalRank = r, r
		j, err := discover(ctx, mapEnv(Env(&jr, s.Addr())))
		if err != nil {
			t.Fatalf("discover rank %d: %v", r, err)
		}
		if j.Source != SourceCommtune || j.Rank != r || j.KV == nil || j.Node != "n" {
			t.Fatalf("rank %d: job = %+v", r, j)
		}
		jobs[r] = j
	}
	if err := jobs[0].KV.Put(ctx, "a", "b"); err != nil {
		t.Fatal(err)
	}
	if v, err := jobs[1].KV.Get(ctx, "a"); err != nil || v != "b" {
		t.Fatalf("Get = %q, %v", v, err)
	}
	for _, j := range jobs {
		if err := j.Close(); err != nil {
			t.Fatal(err)
		}
	}

	// The launcher's variables pointing at a dead server: a clear error.
	dead := *base
	s.Close()
	_, err := discover(ctx, mapEnv(Env(&dead, s.Addr())))
	if err == nil || !strings.Contains(err.Error(), "COMMTUNE_BOOT") {
		t.Fatalf("discover with a dead server: err = %v, want one naming COMMTUNE_BOOT", err)
	}
}

// editEnv applies edits to env: "NAME=value" sets, "-NAME" removes.
func editEnv(env map[string]string, edits ...string) {
	for _, e := range edits {
		if name, ok := strings.CutPrefix(e, "-"); ok {
			delete(env, name)
			continue
		}
		k, v, _ := strings.Cut(e, "=")
		env[k] = v
	}
}
