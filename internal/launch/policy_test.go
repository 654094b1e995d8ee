package launch

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// applyStep feeds one line of a scenario to p and renders the actions:
//
//	exit R CODE | exit R sigN | lost R | bye R | abort R CODE | forward N | cancel | timer
//
// "zombie R" says rank R's process has exited but Run has not handled it
// yet: signals no longer reach it.
// step is an event fed to a policy and the actions it must answer.
type step struct{ in, want string }

// runSteps feeds steps to p, checks each answer, then that every rank
// ended and the job's result (an error's text, "" for success).
func runSteps(t *testing.T, p *policy, steps []step, result string) {
	t.Helper()
	zombies := map[int]bool{}
	for i, s := range steps {
		if got := applyStep(t, p, zombies, s.in); got != s.want {
			t.Fatalf("step %d %q: actions %q, want %q", i, s.in, got, s.want)
		}
	}
	if !p.done() {
		t.Fatalf("policy not done after every rank exited")
	}
	got := ""
	if err := p.result(); err != nil {
		got = err.Error()
	}
	if got != result {
		t.Fatalf("result %q, want %q", got, result)
	}
}

func applyStep(t *testing.T, p *policy, zombies map[int]bool, step string) string {
	t.Helper()
	f := strings.Fields(step)
	num := func(i int) int {
		n, err := strconv.Atoi(strings.TrimPrefix(f[i], "sig"))
		if err != nil {
			t.Fatalf("bad step %q", step)
		}
		return n
	}
	var acts []action
	switch f[0] {
	case "exit":
		st := exitStatus{code: num(2)}
		if strings.HasPrefix(f[2], "sig") {
			st = exitStatus{sig: syscall.Signal(num(2))}
		}
		acts = p.exit(num(1), st)
	case "lost":
		acts = p.lost(num(1))
	case "bye":
		p.bye(num(1))
	case "abort":
		acts = p.abort(num(1), num(2), "gave up")
	case "forward":
		acts = p.forward(syscall.Signal(num(1)))
	case "cancel":
		acts = p.cancel(context.Canceled)
	case "timer":
		acts = p.timer()
	case "zombie":
		zombies[num(1)] = true
	default:
		t.Fatalf("bad step %q", step)
	}
	var out []string
	for _, a := range acts {
		if a.signal != 0 {
			out = append(out, fmt.Sprintf("signal %d", int(a.signal)))
			for r, run := range p.running { // as Run does for live ranks
				if run && !zombies[r] {
					p.sent(r)
				}
			}
		}
		if a.timer != 0 {
			out = append(out, "timer")
		}
		if a.tell {
			out = append(out, fmt.Sprintf("tell %d", a.rank))
		}
		if a.report != nil {
			out = append(out, "report "+a.report.Error())
		}
	}
	return strings.Join(out, ", ")
}

func TestPolicy(t *testing.T) {
	tests := []struct {
		name   string
		n      int
		steps  []step
		result string // "" for nil
	}{
		{"all succeed", 3, []step{{"exit 1 0", ""}, {"exit 0 0", ""}, {"exit 2 0", ""}}, ""},
		{"one fails, the others get a grace then SIGTERM", 3, []step{
			{"exit 1 3", "timer"},
			{"exit 0 4", ""}, // a consequence: blame stays with rank 1
			{"timer", "signal 15, timer"},
			{"exit 2 sig15", ""},
		}, "rank 1 exited with status 3"},
		{"SIGKILL after the second grace", 2, []step{
			{"exit 0 sig11", "timer"},
			{"timer", "signal 15, timer"},
			{"timer", "signal 9"},
			{"timer", ""},
			{"exit 1 sig9", ""},
		}, "rank 0 killed by signal 11 (segmentation fault)"},
		{"a crash seen first as a lost connection", 2, []step{
			{"lost 1", "timer"},
			{"exit 0 4", ""}, // rank 0 noticed the lost peer
			{"exit 1 sig9", ""},
		}, "rank 1 killed by signal 9 (killed)"},
		{"a crash whose exit Run handles only after the grace", 2, []step{
			{"lost 1", "timer"},
			{"zombie 1", ""},
			{"timer", "signal 15, timer"},
			{"exit 0 sig15", ""},
			{"exit 1 sig9", ""},
		}, "rank 1 killed by signal 9 (killed)"},
		{"a crash seen after a peer's error exit takes the blame", 3, []step{
			{"exit 0 1", "timer"}, // rank 0 noticed rank 2's crash first
			{"lost 2", ""},
			{"exit 2 sig9", ""},
			{"exit 1 1", ""},
		}, "rank 2 killed by signal 9 (killed)"},
		{"an exit without goodbye after an error exit is no crash", 3, []step{
			{"exit 1 3", "timer"},
			{"lost 2", ""},
			{"exit 2 4", ""},
			{"exit 0 4", ""},
		}, "rank 1 exited with status 3"},
		{"a crash by signal seen after a peer's error exit", 3, []step{
			{"exit 0 1", "timer"},
			{"exit 2 sig11", ""},
			{"exit 1 1", ""},
		}, "rank 2 killed by signal 11 (segmentation fault)"},
		{"the first crash keeps the blame", 3, []step{
			{"exit 0 sig11", "timer"},
			{"exit 2 sig9", ""},
			{"exit 1 1", ""},
		}, "rank 0 killed by signal 11 (segmentation fault)"},
		{"ranks the launcher killed take no blame", 2, []step{
			{"exit 0 1", "timer"},
			{"timer", "signal 15, timer"},
			{"exit 1 sig15", ""},
		}, "rank 0 exited with status 1"},
		{"lost while running, killed by the launcher", 2, []step{
			{"lost 1", "timer"},
			{"timer", "signal 15, timer"},
			{"exit 0 sig15", ""},
			{"exit 1 sig15", ""},
		}, "rank 1 lost its connection to the launcher without saying goodbye"},
		{"exited 0 and then lost: no goodbye", 2, []step{
			{"exit 0 0", ""},
			{"lost 0", "timer"},
			{"exit 1 0", ""},
		}, "rank 0 exited without saying goodbye to the launcher (no KV Close)"},
		{"lost and then exited 0: no goodbye", 2, []step{
			{"lost 0", "timer"},
			{"exit 0 0", ""},
			{"exit 1 0", ""},
		}, "rank 0 exited without saying goodbye to the launcher (no KV Close)"},
		{"lost after a failing exit is the same failure", 2, []step{
			{"exit 1 2", "timer"},
			{"lost 1", ""},
			{"exit 0 0", ""},
		}, "rank 1 exited with status 2"},
		{"abort", 2, []step{
			{"abort 1 7", "timer"},
			{"exit 1 7", ""},
			{"timer", "signal 15, timer"},
			{"exit 0 sig15", ""},
		}, "rank 1 aborted the job with code 7: gave up"},
		{"forwarded signal kills the ranks", 2, []step{
			{"forward 2", "signal 2, timer"},
			{"exit 1 sig2", ""},
			{"exit 0 sig2", ""},
		}, "rank 1 killed by signal 2 (interrupt)"},
		{"forwarded signal handled by the ranks", 2, []step{
			{"forward 15", "signal 15, timer"},
			{"forward 15", "signal 15"},
			{"exit 1 0", ""},
			{"exit 0 0", ""},
		}, ""},
		{"forwarded signal ignored: SIGKILL after the grace", 1, []step{
			{"forward 2", "signal 2, timer"},
			{"timer", "signal 9"},
			{"exit 0 sig9", ""},
		}, "rank 0 killed by signal 9 (killed)"},
		{"a failure during the grace of a forwarded signal", 2, []step{
			{"forward 15", "signal 15, timer"},
			{"exit 0 3", ""}, // stage is already past the grace: no new timer
			{"exit 1 sig15", ""},
		}, "rank 0 exited with status 3"},
		{"cancel", 2, []step{
			{"cancel", "signal 15, timer"},
			{"exit 0 sig15", ""},
			{"timer", "signal 9"},
			{"exit 1 sig9", ""},
		}, "launch: job stopped: context canceled"},
		{"failure before cancel keeps the blame", 2, []step{
			{"exit 0 1", "timer"},
			{"cancel", "signal 15, timer"},
			{"exit 1 sig15", ""},
		}, "rank 0 exited with status 1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := newPolicy(tc.n, time.Second)
			runSteps(t, p, tc.steps, tc.result)
		})
	}
}

func TestRankErrorExitStatus(t *testing.T) {
	tests := []struct {
		e    RankError
		want int
	}{
		{RankError{Rank: 0, ExitCode: 3}, 3},
		{RankError{Rank: 0, ExitCode: 255}, 255},
		{RankError{Rank: 0, ExitCode: 256}, 1},
		{RankError{Rank: 0, ExitCode: -1, Signal: syscall.SIGKILL}, 137},
		{RankError{Rank: 0, ExitCode: -1, Signal: syscall.SIGTERM}, 143},
		{RankError{Rank: 0, ExitCode: 0, Cause: CauseLost}, 1},
		{RankError{Rank: 0, ExitCode: -1, Cause: CauseLost}, 1},
		{RankError{Rank: 0, ExitCode: 0, Cause: CauseAbort}, 1},
		{RankError{Rank: 0, ExitCode: 42, Cause: CauseAbort}, 42},
	}
	for _, tc := range tests {
		if got := tc.e.ExitStatus(); got != tc.want {
			t.Errorf("%v: ExitStatus = %d, want %d", &tc.e, got, tc.want)
		}
	}
}
