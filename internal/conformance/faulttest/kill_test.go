package faulttest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/commtune/commtune"
	"github.com/commtune/commtune/internal/conformance"
	"github.com/commtune/commtune/internal/launch"
)

// killRing: ranks pass a token around a ring; the victim rank SIGKILLs
// itself after a number of laps. The others must see ErrPeerLost naming
// it, and report how long after the kill they noticed.
func killRing(ctx context.Context, c *commtune.Comm, arg string) error {
	if c.Rank() == 0 {
		fmt.Printf("rank 0: job %s\n", os.Getenv("COMMTUNE_JOB")) // names its shared-memory files
	}
	victim, laps := 2, 200
	n := c.Size()
	next, prev := (c.Rank()+1)%n, (c.Rank()-1+n)%n
	tok := make([]byte, 8)
	for lap := 0; ; lap++ {
		if c.Rank() == victim && lap == laps {
			// Stamp the moment of death for the others to compare with.
			os.WriteFile(arg, []byte(strconv.FormatInt(time.Now().UnixNano(), 10)), 0o600)
			killSelf()
			select {}
		}
		_, err := c.Sendrecv(ctx, tok, next, 0, tok, prev, 0)
		if err != nil {
			noticed := time.Now()
			var pl *commtune.PeerLostError
			if !errors.Is(err, commtune.ErrPeerLost) || !errors.As(err, &pl) {
				return fmt.Errorf("lap %d: want ErrPeerLost, got %v", lap, err)
			}
			stamp, rerr := os.ReadFile(arg)
			killed, _ := strconv.ParseInt(strings.TrimSpace(string(stamp)), 10, 64)
			if rerr != nil || killed == 0 {
				return fmt.Errorf("lap %d: %v, but the victim left no stamp", lap, err)
			}
			fmt.Printf("rank %d: lap %d: %v (noticed %v after the kill)\n", c.Rank(), lap, err, noticed.Sub(time.Unix(0, killed)).Round(time.Microsecond))
			return err // exit non-zero, as a real program would
		}
	}
}

// TestKillProcesses kills one rank of four mid-exchange: every other rank
// must fail with ErrPeerLost naming it, the launcher must blame it, and no
// process of the job may remain.
func TestKillProcesses(t *testing.T) {
	for _, tr := range conformance.Transports {
		t.Run(tr.Name, func(t *testing.T) { testKill(t, tr.Env) })
	}
}

func testKill(t *testing.T, env string) {
	stamp := t.TempDir() + "/killed"
	out, err := conformance.RunJob(4, "kill", stamp, env)
	// This job's files only: other packages' tests may run jobs meanwhile.
	if m := regexp.MustCompile(`rank 0: job (\S+)`).FindStringSubmatch(out); m == nil {
		t.Errorf("rank 0 did not name its job:\n%s", out)
	} else if left, _ := filepath.Glob("/dev/shm/commtune-" + m[1] + "*"); len(left) > 0 {
		t.Errorf("shared memory files left after the job: %v", left)
	}
	var re *launch.RankError
	if !errors.As(err, &re) || re.Rank != 2 || re.Signal != syscall.SIGKILL {
		t.Fatalf("launcher error %v, want rank 2 killed by SIGKILL\n%s", err, out)
	}
	// Every survivor's operation failed with ErrPeerLost (killRing fails
	// otherwise with "want ErrPeerLost"), naming the victim or a neighbour
	// that ended because of it; the victim's neighbours name the victim.
	for _, r := range []int{0, 1, 3} {
		if !regexp.MustCompile(fmt.Sprintf(`\[%d\] rank %d: FAIL: rank \d lost: `, r, r)).MatchString(out) {
			t.Errorf("rank %d did not fail with ErrPeerLost:\n%s", r, out)
		}
	}
	if !strings.Contains(out, "rank 2 lost: ") {
		t.Errorf("no rank reported losing rank 2:\n%s", out)
	}
	if left := processesOf(os.Args[0]); len(left) > 0 {
		t.Errorf("processes left behind: %v", left)
	}
	t.Logf("%v\n%s", err, out)
}

// processesOf lists live processes running exe other than this one.
func processesOf(exe string) []int {
	var pids []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		path, err := os.Readlink("/proc/" + e.Name() + "/exe")
		if err != nil || path != exe {
			continue
		}
		stat, _ := os.ReadFile("/proc/" + e.Name() + "/stat")
		if f := strings.Fields(string(stat)); len(f) > 2 && f[2] == "Z" {
			continue // a zombie holds no resources and runs nothing
		}
		pids = append(pids, pid)
	}
	return pids
}

// killSelf ends this process as SIGKILL does, without a chance to clean
// up (os.Process.Kill: SIGKILL on Unix, TerminateProcess on Windows).
func killSelf() {
	if p, err := os.FindProcess(os.Getpid()); err == nil {
		p.Kill()
	}
}
