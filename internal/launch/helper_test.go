package launch

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/commtune/commtune/internal/boot"
	"github.com/commtune/commtune/internal/driver/shm"
)

// The test binary doubles as the rank program: with helperEnv set, TestMain
// runs helper instead of the tests. Each helper prints "pid N" first, so
// tests can check afterwards that no process is left.
const helperEnv = "LAUNCH_TEST_HELPER"

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		os.Exit(helper(mode))
	}
	os.Exit(m.Run())
}

// helper is a rank. Modes:
//
//	exchange   put/fence/get addresses with every rank, say goodbye, exit 0
//	fail       exchange; rank $FAIL_RANK exits 3 without goodbye, the others
//	           fence again (which fails: ErrRankGone) and exit 4
//	kill9      exchange; rank $FAIL_RANK kills itself with SIGKILL, the
//	           others wait forever for a key nobody puts
//	grandchild rank 0 starts `sleep 60`, prints "grandchild N", exits 5;
//	           the others wait forever
//	abort      rank 1 aborts with code 7; the others wait forever
//	nobye      connect and exit 0 without goodbye
//	survive    create shared-memory files of the job, exchange; rank
//	           $FAIL_RANK kills itself with SIGKILL, the others watch for
//	           losses (keep-going), print "rank R told rank V is lost" for
//	           each, say goodbye and exit 0 once told of the victim
//	byefail    exchange; rank $FAIL_RANK says goodbye and exits 3, the
//	           others wait forever
//	shmcrash   create shared-memory files of the job, then rank 1 is killed
//	wait       print "ready", then wait forever (for signals)
//	echo       print two lines and an unterminated one; no KVS
func helper(mode string) int {
	fmt.Printf("pid %d\n", os.Getpid())
	ctx := context.Background()
	if mode == "echo" {
		fmt.Printf("hello\nworld\ntail")
		return 0
	}
	job, err := boot.Discover(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		return 10
	}
	failRank, _ := strconv.Atoi(os.Getenv("FAIL_RANK"))
	waitForever := func() int {
		_, err := job.KV.Get(ctx, "nobody-puts-this")
		fmt.Fprintln(os.Stderr, "helper: wait ended:", err)
		return 11
	}
	switch mode {
	case "shmcrash":
		// Like a rank that dies between creating its shared-memory files
		// and unlinking them: the launcher must remove them.
		for _, name := range []string{fmt.Sprintf("commtune-%s-%d", job.ID, job.Rank), fmt.Sprintf("commtune-%s-%d-0.pipe", job.ID, job.Rank)} {
			if err := os.WriteFile(filepath.Join(shm.DefaultDir, name), nil, 0o600); err != nil {
				fmt.Fprintln(os.Stderr, "helper:", err)
				return 14
			}
			fmt.Printf("created %s\n", name)
		}
		if err := job.KV.Fence(ctx); err != nil {
			return 15
		}
		if job.Rank == 1 {
			killSelf()
		}
		return waitForever()
	case "exchange", "fail", "kill9":
		if err := exchange(ctx, job); err != nil {
			fmt.Fprintln(os.Stderr, "helper:", err)
			return 12
		}
		switch {
		case mode == "exchange":
			if err := job.Close(); err != nil {
				fmt.Fprintln(os.Stderr, "helper: close:", err)
				return 13
			}
			return 0
		case mode == "fail" && job.Rank == failRank:
			return 3
		case mode == "fail":
			err := job.KV.Fence(ctx)
			fmt.Printf("second fence: %v\n", errors.Is(err, boot.ErrRankGone))
			return 4
		case job.Rank == failRank:
			killSelf()
		}
		return waitForever()
	case "grandchild":
		if job.Rank == 0 {
			cmd := exec.Command("sleep", "60")
			if err := cmd.Start(); err != nil {
				fmt.Fprintln(os.Stderr, "helper:", err)
				return 14
			}
			fmt.Printf("grandchild %d\n", cmd.Process.Pid)
			return 5
		}
		return waitForever()
	case "abort":
		if job.Rank == 1 {
			if err := job.KV.(boot.Aborter).Abort(ctx, 7, "gave up"); err != nil {
				fmt.Fprintln(os.Stderr, "helper:", err)
			}
		}
		return waitForever()
	case "nobye":
		return 0
	case "survive":
		return survive(ctx, job, failRank)
	case "byefail":
		if err := exchange(ctx, job); err != nil {
			fmt.Fprintln(os.Stderr, "helper:", err)
			return 12
		}
		if job.Rank == failRank {
			job.Close()
			return 3
		}
		return waitForever()
	case "wait":
		fmt.Println("ready")
		select {}
	}
	fmt.Fprintln(os.Stderr, "helper: unknown mode", mode)
	return 15
}

// killSelf ends this process as SIGKILL does, without a chance to clean
// up (os.Process.Kill: SIGKILL on Unix, TerminateProcess on Windows).
func killSelf() {
	if p, err := os.FindProcess(os.Getpid()); err == nil {
		p.Kill()
	}
}

func exchange(ctx context.Context, job *boot.Job) error {
	if err := job.KV.Put(ctx, fmt.Sprint("addr/", job.Rank), fmt.Sprint("addr-of-", job.Rank)); err != nil {
		return err
	}
	if err := job.KV.Fence(ctx); err != nil {
		return err
	}
	for p := range job.Size {
		v, err := job.KV.Get(ctx, fmt.Sprint("addr/", p))
		if err != nil {
			return err
		}
		if v != fmt.Sprint("addr-of-", p) {
			return fmt.Errorf("addr/%d = %q", p, v)
		}
	}
	fmt.Printf("rank %d of %d (local %d of %d) saw every address\n", job.Rank, job.Size, job.LocalRank, job.LocalSize)
	return job.KV.Fence(ctx)
}

// survive is the helper's survive mode.
func survive(ctx context.Context, job *boot.Job, victim int) int {
	if !job.KeepGoing {
		fmt.Fprintln(os.Stderr, "helper: survive without COMMTUNE_KEEP_GOING=1")
		return 16
	}
	name := fmt.Sprintf("commtune-%s-%d", job.ID, job.Rank)
	if err := os.WriteFile(filepath.Join(shm.DefaultDir, name), nil, 0o600); err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		return 14
	}
	fmt.Printf("created %s\n", name)
	if err := exchange(ctx, job); err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		return 12
	}
	if job.Rank == victim {
		killSelf()
	}
	told := make(chan int, job.Size)
	w, ok := job.KV.(boot.LossWatcher)
	if !ok {
		fmt.Fprintln(os.Stderr, "helper: the KV does not report losses")
		return 17
	}
	if err := w.WatchLosses(ctx, func(r int) { told <- r }); err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		return 18
	}
	for r := range told {
		fmt.Printf("rank %d told rank %d is lost\n", job.Rank, r)
		if r == victim {
			break
		}
	}
	if err := job.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "helper: close:", err)
		return 13
	}
	return 0
}
