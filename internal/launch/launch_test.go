package launch

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/commtune/commtune/internal/driver/shm"
)

// outBuffer collects output and lets a test wait for a number of lines
// containing a word.
type outBuffer struct {
	mu   sync.Mutex
	b    bytes.Buffer
	more chan struct{}
}

func newOutBuffer() *outBuffer { return &outBuffer{more: make(chan struct{}, 1)} }

func (o *outBuffer) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	select {
	case o.more <- struct{}{}:
	default:
	}
	return o.b.Write(p)
}

func (o *outBuffer) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.b.String()
}

func (o *outBuffer) waitLines(t *testing.T, word string, n int) {
	t.Helper()
	deadline := time.After(testTimeout)
	for strings.Count(o.String(), word) < n {
		select {
		case <-o.more:
		case <-deadline:
			t.Fatalf("never saw %d lines with %q; output:\n%s", n, word, o.String())
		}
	}
}

// testTimeout only bounds what a bug could make hang; nothing is timed.
const testTimeout = 60 * time.Second

var pidLine = regexp.MustCompile(`(?m)(?:pid|grandchild) (\d+)$`)

// checkGone fails if any process whose pid appears in out still exists
// (running or as an unreaped zombie).
func checkGone(t *testing.T, out string) {
	t.Helper()
	pids := pidLine.FindAllStringSubmatch(out, -1)
	if len(pids) == 0 {
		t.Fatalf("no pids in output:\n%s", out)
	}
	for _, m := range pids {
		stat, err := os.ReadFile("/proc/" + m[1] + "/stat")
		if err != nil {
			continue // gone
		}
		// A reused pid belongs to something else: only ours count.
		if bytes.Contains(stat, []byte("(sleep)")) || bytes.Contains(stat, []byte("(launch.test)")) {
			t.Errorf("process %s is still there: %s", m[1], stat)
		}
	}
}

// noRaceSleep keeps race-enabled helpers from sleeping a second at exit
// (the race detector's atexit_sleep_ms), which only slows the tests.
func noRaceSleep() string {
	return "GORACE=" + strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0")
}

// start runs a job of n helpers in mode in the background.
func start(ctx context.Context, t *testing.T, n int, mode string, opt Options) (<-chan error, *outBuffer) {
	t.Helper()
	out := newOutBuffer()
	opt.N = n
	opt.Args = []string{os.Args[0]}
	opt.Env = append(opt.Env, helperEnv+"="+mode, noRaceSleep())
	opt.Stdout, opt.Stderr = out, out
	opt.Prefix = true
	if opt.KillGrace == 0 {
		opt.KillGrace = 200 * time.Millisecond // a policy value, not an assertion
	}
	done := make(chan error, 1)
	go func() { done <- Run(ctx, opt) }()
	return done, out
}

func runJob(t *testing.T, n int, mode string, opt Options) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	done, out := start(ctx, t, n, mode, opt)
	err := <-done
	if ctx.Err() != nil {
		t.Fatalf("job did not end by itself; output:\n%s", out)
	}
	return out.String(), err
}

func TestRunExchange(t *testing.T) {
	for _, n := range []int{1, 3, 8} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			out, err := runJob(t, n, "exchange", Options{})
			if err != nil {
				t.Fatalf("Run: %v; output:\n%s", err, out)
			}
			for r := range n {
				want := fmt.Sprintf("[%d] rank %d of %d (local %d of %d) saw every address\n", r, r, n, r, n)
				if !strings.Contains(out, want) {
					t.Errorf("output lacks %q:\n%s", want, out)
				}
			}
			checkGone(t, out)
		})
	}
}

// TestShmFilesRemoved: a rank killed while its shared-memory files still
// exist leaves none once Run returns.
func TestShmFilesRemoved(t *testing.T) {
	out, err := runJob(t, 2, "shmcrash", Options{})
	var re *RankError
	if !errors.As(err, &re) || re.Rank != 1 || re.Signal != syscall.SIGKILL {
		t.Fatalf("Run = %v, want rank 1 killed; output:\n%s", err, out)
	}
	// This job's files only: other packages' tests may run jobs meanwhile.
	created := regexp.MustCompile(`created (commtune-\S+)`).FindAllStringSubmatch(out, -1)
	if len(created) != 4 {
		t.Fatalf("the ranks reported %d files, want 4:\n%s", len(created), out)
	}
	for _, m := range created {
		if _, err := os.Stat(filepath.Join(shm.DefaultDir, m[1])); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s left behind (%v)", m[1], err)
		}
	}
}

func TestRunFailures(t *testing.T) {
	tests := []struct {
		name    string
		n       int
		mode    string
		env     []string
		want    RankError
		wantOut string
	}{
		{"one exits 3", 3, "fail", []string{"FAIL_RANK=1"}, RankError{Rank: 1, ExitCode: 3}, "second fence: true"},
		{"one is killed by SIGKILL", 3, "kill9", []string{"FAIL_RANK=2"}, RankError{Rank: 2, ExitCode: -1, Signal: syscall.SIGKILL}, ""},
		{"a grandchild is left", 2, "grandchild", nil, RankError{Rank: 0, ExitCode: 5}, "grandchild"},
		{"abort", 3, "abort", nil, RankError{Rank: 1, ExitCode: 7, Cause: CauseAbort, Message: "gave up"}, ""},
		{"no goodbye", 2, "nobye", nil, RankError{ExitCode: 0, Cause: CauseLost}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cleaned := false
			out, err := runJob(t, tc.n, tc.mode, Options{Env: tc.env, Cleanup: func() { cleaned = true }})
			var re *RankError
			if !errors.As(err, &re) {
				t.Fatalf("Run = %v, want *RankError; output:\n%s", err, out)
			}
			got := *re
			if tc.mode == "nobye" {
				got.Rank = 0 // either rank may be the first seen
			}
			if got != tc.want {
				t.Fatalf("Run = %#v (%v), want %#v; output:\n%s", got, err, tc.want, out)
			}
			if !strings.Contains(out, tc.wantOut) {
				t.Errorf("output lacks %q:\n%s", tc.wantOut, out)
			}
			if !cleaned {
				t.Error("Cleanup was not called")
			}
			checkGone(t, out)
		})
	}
}

func TestRunForwardsSignals(t *testing.T) {
	sigs := make(chan os.Signal, 1)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	done, out := start(ctx, t, 4, "wait", Options{Signals: sigs})
	out.waitLines(t, "ready", 4)
	sigs <- syscall.SIGTERM
	err := <-done
	var re *RankError
	if !errors.As(err, &re) || re.Signal != syscall.SIGTERM {
		t.Fatalf("Run = %v, want a rank killed by SIGTERM; output:\n%s", err, out)
	}
	checkGone(t, out.String())
}

func TestRunCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done, out := start(ctx, t, 2, "wait", Options{})
	out.waitLines(t, "ready", 2)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Run = %v, want context.Canceled", err)
	}
	checkGone(t, out.String())
}

func TestRunOutput(t *testing.T) {
	tests := []struct {
		name   string
		prefix bool
		want   []string // lines each rank must produce, %d = rank
	}{
		{"prefixed", true, []string{"[%d] hello", "[%d] world", "[%d] tail"}},
		{"plain", false, []string{"hello", "world"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := Run(context.Background(), Options{
				N: 3, Args: []string{os.Args[0]}, Env: []string{helperEnv + "=echo", noRaceSleep()},
				Prefix: tc.prefix, Stdout: &syncWriter{w: &stdout}, Stderr: &syncWriter{w: &stderr},
			})
			if err != nil {
				t.Fatalf("Run: %v; stderr:\n%s", err, stderr.String())
			}
			text := stdout.String()
			lines := map[string]int{}
			sc := bufio.NewScanner(strings.NewReader(text))
			for sc.Scan() {
				lines[sc.Text()]++
			}
			for r := range 3 {
				for _, w := range tc.want {
					line := w
					if strings.Contains(w, "%d") {
						line = fmt.Sprintf(w, r)
					}
					if lines[line] == 0 {
						t.Errorf("no line %q in output:\n%s", line, text)
					}
				}
			}
			if strings.Count(text, "tail") != 3 {
				t.Errorf("unterminated last lines lost:\n%s", text)
			}
		})
	}
}

type syncWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

func TestRunBadOptions(t *testing.T) {
	tests := []struct {
		name string
		opt  Options
		want string
	}{
		{"no ranks", Options{N: 0, Args: []string{"true"}}, "0 ranks requested"},
		{"no program", Options{N: 1}, "no program"},
		{"negative grace", Options{N: 1, Args: []string{"true"}, KillGrace: -1}, "negative kill grace"},
		{"more nodes than ranks", Options{N: 2, Nodes: 3, Args: []string{"true"}}, "3 nodes for 2 ranks"},
		{"negative nodes", Options{N: 2, Nodes: -1, Args: []string{"true"}}, "-1 nodes for 2 ranks"},
		{"env without =", Options{N: 1, Args: []string{"true"}, Env: []string{"FOO"}}, `"FOO" is not NAME=value`},
		{"env sets a launcher variable", Options{N: 1, Args: []string{"true"}, Env: []string{"COMMTUNE_RANK=3"}}, "sets COMMTUNE_RANK"},
		{"program not found", Options{N: 2, Args: []string{"/nonexistent/prog"}}, "/nonexistent/prog"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := Run(context.Background(), tc.opt)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Run = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestRunPlainPrograms(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want error
	}{
		{"true", []string{"true"}, nil},
		{"false", []string{"false"}, &RankError{Rank: 0, ExitCode: 1}},
		{"shell exit", []string{"sh", "-c", `exit $((COMMTUNE_RANK + 2))`}, &RankError{Rank: 0, ExitCode: 2}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := Run(context.Background(), Options{N: 1, Args: tc.args, KillGrace: 100 * time.Millisecond})
			if fmt.Sprint(err) != fmt.Sprint(tc.want) {
				t.Fatalf("Run = %v, want %v", err, tc.want)
			}
		})
	}
}
