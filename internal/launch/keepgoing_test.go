package launch

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/commtune/commtune/internal/driver/shm"
)

// TestPolicyKeepGoing: with keep-going, a rank that ends without goodbye
// is lost — the others are told at once, the loss is reported once its
// cause is known — and the job goes on; everything else is as without.
func TestPolicyKeepGoing(t *testing.T) {
	tests := []struct {
		name   string
		n      int
		steps  []step
		result string // "" for nil
		lost   int    // ranks lost
	}{
		{"all succeed", 2, []step{{"bye 0", ""}, {"exit 0 0", ""}, {"bye 1", ""}, {"exit 1 0", ""}}, "", 0},
		{"killed, seen first by its exit", 3, []step{
			{"exit 2 sig9", "tell 2, report rank 2 killed by signal 9 (killed)"},
			{"lost 2", ""},
			{"bye 0", ""}, {"exit 0 0", ""},
			{"bye 1", ""}, {"exit 1 0", ""},
		}, "", 1},
		{"killed, seen first by its connection", 3, []step{
			{"lost 2", "tell 2"},
			{"exit 2 sig9", "report rank 2 killed by signal 9 (killed)"},
			{"exit 0 0", ""},
			{"exit 1 0", ""},
		}, "", 1},
		{"losses reported in the order found, whatever the order of the exits", 3, []step{
			{"lost 1", "tell 1"},
			{"lost 0", "tell 0"},
			{"exit 0 4", ""}, // held: rank 1, lost first, has not exited
			{"exit 1 3", "report rank 1 exited with status 3, report rank 0 exited with status 4"},
			{"lost 2", "tell 2"},
			{"exit 2 4", "report rank 2 exited with status 4"},
		}, "rank 1 exited with status 3", 3},
		{"exited with an error without goodbye", 2, []step{
			{"exit 1 3", "tell 1, report rank 1 exited with status 3"},
			{"exit 0 0", ""},
		}, "", 1},
		{"exited 0 without goodbye, seen by its exit first", 2, []step{
			{"exit 1 0", ""},
			{"lost 1", "tell 1, report rank 1 exited without saying goodbye to the launcher (no KV Close)"},
			{"exit 0 0", ""},
		}, "", 1},
		{"exited 0 without goodbye, seen by its connection first", 2, []step{
			{"lost 1", "tell 1"},
			{"exit 1 0", "report rank 1 exited without saying goodbye to the launcher (no KV Close)"},
			{"exit 0 0", ""},
		}, "", 1},
		{"an error after goodbye ends the job", 3, []step{
			{"exit 2 sig9", "tell 2, report rank 2 killed by signal 9 (killed)"},
			{"bye 1", ""},
			{"exit 1 4", "timer"},
			{"timer", "signal 15, timer"},
			{"exit 0 sig15", ""},
		}, "rank 1 exited with status 4", 1},
		{"once the job is ending, a crash is no loss", 2, []step{
			{"bye 0", ""},
			{"exit 0 1", "timer"},
			{"exit 1 sig9", ""}, // takes the blame, as without keep-going
		}, "rank 1 killed by signal 9 (killed)", 0},
		{"every rank lost: the first loss", 2, []step{
			{"exit 1 sig11", "tell 1, report rank 1 killed by signal 11 (segmentation fault)"},
			{"lost 0", "tell 0"},
			{"exit 0 sig9", "report rank 0 killed by signal 9 (killed)"},
		}, "rank 1 killed by signal 11 (segmentation fault)", 2},
		{"abort still ends the job", 3, []step{
			{"exit 0 sig9", "tell 0, report rank 0 killed by signal 9 (killed)"},
			{"abort 1 7", "timer"},
			{"exit 1 7", ""},
			{"timer", "signal 15, timer"},
			{"exit 2 sig15", ""},
		}, "rank 1 aborted the job with code 7: gave up", 1},
		{"lost while running, then the job is stopped", 2, []step{
			{"lost 1", "tell 1"},
			{"cancel", "signal 15, timer"},
			{"exit 1 sig15", "report rank 1 lost its connection to the launcher without saying goodbye"},
			{"exit 0 sig15", ""},
		}, "launch: job stopped: context canceled", 1},
		{"forwarded signal as without keep-going", 2, []step{
			{"forward 2", "signal 2, timer"},
			{"exit 1 sig2", ""},
			{"exit 0 sig2", ""},
		}, "rank 1 killed by signal 2 (interrupt)", 0},
		{"a plain program that never connects and fails is lost", 2, []step{
			{"exit 0 1", "tell 0, report rank 0 exited with status 1"},
			{"exit 1 0", ""},
		}, "", 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := newPolicy(tc.n, time.Second)
			p.keepGoing = true
			runSteps(t, p, tc.steps, tc.result)
			if p.nlost != tc.lost {
				t.Fatalf("%d ranks lost, want %d", p.nlost, tc.lost)
			}
		})
	}
}

// TestRunKeepGoing runs jobs with KeepGoing: a rank killed by SIGKILL is
// lost, the others are told and exit 0, and Run returns nil with the loss
// reported to OnLost; a job whose every rank is lost fails with the first
// loss; an error exit after goodbye ends the job as without KeepGoing. No
// process and none of the job's shared-memory files are left.
func TestRunKeepGoing(t *testing.T) {
	tests := []struct {
		name string
		n    int
		mode string
		env  []string
		want *RankError // Run's error; nil for success
		lost []RankError
		told int // "told" lines, each naming the victim
	}{
		{"one killed, the others go on", 4, "survive", []string{"FAIL_RANK=2"}, nil,
			[]RankError{{Rank: 2, ExitCode: -1, Signal: syscall.SIGKILL}}, 3},
		{"every rank lost", 3, "fail", []string{"FAIL_RANK=1"}, &RankError{Rank: 1, ExitCode: 3},
			[]RankError{{Rank: 1, ExitCode: 3}, {Rank: 0, ExitCode: 4}, {Rank: 2, ExitCode: 4}}, 0},
		{"error after goodbye ends the job", 3, "byefail", []string{"FAIL_RANK=1"}, &RankError{Rank: 1, ExitCode: 3}, nil, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var lost []RankError
			cleaned := false
			out, err := runJob(t, tc.n, tc.mode, Options{Env: tc.env, KeepGoing: true,
				OnLost: func(e *RankError) { lost = append(lost, *e) }, Cleanup: func() { cleaned = true }})
			switch {
			case tc.want == nil && err != nil:
				t.Fatalf("Run = %v, want nil; output:\n%s", err, out)
			case tc.want != nil:
				var re *RankError
				if !errors.As(err, &re) || *re != *tc.want {
					t.Fatalf("Run = %v, want %v; output:\n%s", err, tc.want, out)
				}
			}
			// The victim's loss first; the order of the others' is theirs.
			if len(lost) != len(tc.lost) || len(lost) > 0 && lost[0] != tc.lost[0] {
				t.Fatalf("losses %v, want %v; output:\n%s", lost, tc.lost, out)
			}
			for _, w := range tc.lost[min(1, len(tc.lost)):] {
				if !slices.Contains(lost, w) {
					t.Errorf("losses %v lack %v", lost, w)
				}
			}
			victim := strings.TrimPrefix(tc.env[0], "FAIL_RANK=")
			if got := strings.Count(out, " told rank "+victim+" is lost"); got != tc.told || strings.Count(out, " told rank ") != tc.told {
				t.Errorf("%d ranks told of rank %s's loss, want %d; output:\n%s", got, victim, tc.told, out)
			}
			if !cleaned {
				t.Error("Cleanup was not called")
			}
			for _, m := range regexp.MustCompile(`created (commtune-\S+)`).FindAllStringSubmatch(out, -1) {
				if _, err := os.Stat(filepath.Join(shm.DefaultDir, m[1])); !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("%s left behind (%v)", m[1], err)
				}
			}
			checkGone(t, out)
		})
	}
}

// TestRunKeepGoingEnv: only KeepGoing gives ranks COMMTUNE_KEEP_GOING —
// not Options.Env, nor the launcher's own environment.
func TestRunKeepGoingEnv(t *testing.T) {
	err := Run(context.Background(), Options{N: 1, Args: []string{"true"}, Env: []string{"COMMTUNE_KEEP_GOING=1"}})
	if err == nil || !strings.Contains(err.Error(), "sets COMMTUNE_KEEP_GOING") {
		t.Fatalf("Run with COMMTUNE_KEEP_GOING in Env = %v, want it refused", err)
	}
	t.Setenv("COMMTUNE_KEEP_GOING", "1")
	for _, keep := range []bool{false, true} {
		var out bytes.Buffer
		err := Run(context.Background(), Options{N: 1, KeepGoing: keep, Args: []string{"sh", "-c", `echo "keep=${COMMTUNE_KEEP_GOING-unset}"`},
			Stdout: &syncWriter{w: &out}})
		want := map[bool]string{false: "keep=unset\n", true: "keep=1\n"}[keep]
		if err != nil || out.String() != want {
			t.Errorf("KeepGoing %t: Run = %v, output %q, want %q", keep, err, out.String(), want)
		}
	}
}
