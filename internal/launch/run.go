package launch

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/commtune/commtune/internal/auth"
	"github.com/commtune/commtune/internal/boot"
	"github.com/commtune/commtune/internal/driver/shm"
)

// Run starts opt.N ranks of opt.Args on this node and waits for all of
// them. It returns nil iff every rank exited 0 (and each that connected to
// the KVS said goodbye) — with opt.KeepGoing, every rank that was not lost
// (opt.OnLost hears of those); *RankError naming the first rank that
// failed; or an error wrapping ctx's if ctx ended first. docs/launcher.md
// describes the environment, signals, failure policy and cleanup.
func Run(ctx context.Context, opt Options) error {
	opt, err := opt.withDefaults()
	if err != nil {
		return err
	}
	prog, err := exec.LookPath(opt.Args[0])
	if err != nil {
		return fmt.Errorf("launch: %w", err)
	}
	secret, err := auth.NewSecret()
	if err != nil {
		return fmt.Errorf("launch: %w", err)
	}
	id, err := boot.NewJobID()
	if err != nil {
		return fmt.Errorf("launch: %w", err)
	}
	if opt.OnJob != nil {
		opt.OnJob(id)
	}
	srv, err := boot.NewServer(opt.N, secret, opt.Logger)
	if err != nil {
		return fmt.Errorf("launch: %w", err)
	}
	defer srv.Close()
	if err := becomeSubreaper(); err != nil {
		opt.Logger.Warn("launch: processes left by ranks may linger as zombies", "err", err)
	}

	j := &job{
		id:    id,
		opt:   opt,
		srv:   srv,
		out:   &output{prefix: opt.Prefix, log: opt.Logger},
		exits: make(chan rankExit, opt.N),
	}
	node, err := os.Hostname()
	if err != nil || node == "" {
		node = "localhost"
	}
	cpus := allowedCPUs()
	for r := range opt.N {
		spec := boot.Job{Rank: r, Size: opt.N, LocalRank: r, LocalSize: opt.N, ID: id, Secret: secret, Node: node, KeepGoing: opt.KeepGoing}
		if opt.Nodes > 1 {
			i, first, size := nodeBlock(r, opt.N, opt.Nodes)
			spec.Node, spec.LocalRank, spec.LocalSize = fmt.Sprintf("%s/%d", node, i), r-first, size
			j.cpus = nodeCPUs(cpus, i, opt.Nodes)
		}
		if err := j.start(r, prog, &spec); err != nil {
			j.abandon()
			return fmt.Errorf("launch: starting rank %d: %w", r, err)
		}
	}
	res := j.supervise(ctx)
	j.finish()
	return res
}

// rankExit reports that a rank's process ended.
type rankExit struct {
	rank   int
	status exitStatus
}

// job is one Run's state.
type job struct {
	id      string
	opt     Options
	srv     *boot.Server
	out     *output
	procs   []*rankProc
	exits   chan rankExit
	reapers sync.WaitGroup
	pol     *policy
	cpus    []int // where the rank being started may run; nil: anywhere
}

// nodeBlock returns the pretend node of rank r when n ranks are split
// into nodes blocks (Options.Nodes): its number, its first rank and its
// ranks.
func nodeBlock(r, n, nodes int) (node, first, size int) {
	base, extra := n/nodes, n%nodes
	// The first extra blocks hold base+1 ranks.
	if big := extra * (base + 1); r < big {
		node = r / (base + 1)
		return node, node * (base + 1), base + 1
	} else {
		node = extra + (r-big)/base
		return node, big + (node-extra)*base, base
	}
}

// nodeCPUs returns pretend node i's share of cpus when they are split
// among nodes: as many processors each as there are for all (a node of its
// own hardware), none shared; nil (anywhere) when nodes outnumber them.
func nodeCPUs(cpus []int, i, nodes int) []int {
	if len(cpus) < nodes {
		return nil
	}
	return cpus[i*len(cpus)/nodes : (i+1)*len(cpus)/nodes]
}

// start starts rank r of prog with the launcher's environment.
func (j *job) start(r int, prog string, spec *boot.Job) error {
	cmd := exec.Command(prog, j.opt.Args[1:]...)
	cmd.Args[0] = j.opt.Args[0] // what the program sees as its name, as a shell does
	// Later entries win: the launcher's variables cannot be shadowed by a
	// stale outer job's, nor by Options.Env (rejected in withDefaults).
	cmd.Env = append(append(launcherEnv(os.Environ()), j.opt.Env...), boot.Env(spec, j.srv.Addr())...)
	stdout, err := j.out.pipe(r, j.opt.Stdout)
	if err != nil {
		return err
	}
	defer stdout.Close()
	stderr, err := j.out.pipe(r, j.opt.Stderr)
	if err != nil {
		return err
	}
	defer stderr.Close()
	cmd.Stdout, cmd.Stderr = stdout, stderr // stdin stays nil: /dev/null

	p, err := startProc(r, cmd, j.cpus)
	if err != nil {
		return err
	}
	j.procs = append(j.procs, p)
	j.reapers.Add(1)
	go func() {
		st := p.wait()
		j.exits <- rankExit{r, st}
		reapGroup(p.pgid)
		j.reapers.Done()
	}()
	return nil
}

// abandon kills the ranks started so far, when a later one could not be.
func (j *job) abandon() {
	for _, p := range j.procs {
		p.signal(syscall.SIGKILL)
	}
	for range j.procs {
		<-j.exits
	}
	j.finish()
}

// supervise feeds the policy until every rank has exited and returns Run's
// result.
func (j *job) supervise(ctx context.Context) error {
	j.pol = newPolicy(j.opt.N, j.opt.KillGrace)
	j.pol.keepGoing = j.opt.KeepGoing
	events := j.srv.Events()
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	var timerC <-chan time.Time
	ctxDone := ctx.Done()
	signals := j.opt.Signals

	do := func(acts []action) {
		for _, a := range acts {
			if a.signal != 0 {
				for r, p := range j.procs {
					if j.pol.running[r] && p.signal(a.signal) {
						j.pol.sent(r)
					}
				}
			}
			if a.timer != 0 {
				timer.Reset(a.timer)
				timerC = timer.C
			}
			if a.tell {
				j.opt.Logger.Info("launch: telling the other ranks a rank is lost", "rank", a.rank)
				j.srv.ReportLost(a.rank)
			}
			if a.report != nil && j.opt.OnLost != nil {
				e := *a.report
				j.opt.OnLost(&e)
			}
		}
	}
	// KVS events are applied before any rank exit received after them. The
	// server reports a rank's loss before it answers the fences that loss
	// fails, so a rank that exits because of them is never blamed first.
	drain := func() {
		for {
			select {
			case ev, ok := <-events:
				if !ok {
					events = nil
					return
				}
				do(j.event(ev))
			default:
				return
			}
		}
	}

	for !j.pol.done() {
		drain()
		select {
		case ev, ok := <-events:
			if !ok {
				events = nil
				continue
			}
			do(j.event(ev))
		case ex := <-j.exits:
			drain()
			j.logExit(ex)
			if j.srv.Left(ex.rank) {
				j.pol.bye(ex.rank)
			}
			do(j.pol.exit(ex.rank, ex.status))
		case sig, ok := <-signals:
			if !ok {
				signals = nil // closed: nothing more to forward
				continue
			}
			if s, ok := sig.(syscall.Signal); ok {
				j.opt.Logger.Info("launch: forwarding signal to the ranks", "signal", s)
				do(j.pol.forward(s))
			}
		case <-ctxDone:
			ctxDone = nil
			do(j.pol.cancel(ctx.Err()))
		case <-timerC:
			timerC = nil
			do(j.pol.timer())
		}
	}

	// Every rank has exited, so every KVS connection is ending: wait for
	// the server to see them end, and count any rank that left without
	// BYE.
	sctx, cancel := context.WithTimeout(context.Background(), j.opt.KillGrace)
	defer cancel()
	if err := j.srv.Shutdown(sctx); err != nil {
		j.opt.Logger.Warn("launch: stopping the kvs", "err", err)
	}
	for ev := range events {
		// No rank is left to signal or tell; a loss may still be reported.
		for _, a := range j.event(ev) {
			if a.report != nil && j.opt.OnLost != nil {
				e := *a.report
				j.opt.OnLost(&e)
			}
		}
	}
	return j.pol.result()
}

// launcherEnv is the launcher's environment as ranks inherit it: without
// boot.EnvKeepGoing, which only Options.KeepGoing may give them, so that
// a value left in a shell does not make ranks of an ordinary job wait for
// reports that never come.
func launcherEnv(env []string) []string {
	return slices.DeleteFunc(slices.Clone(env), func(kv string) bool {
		return strings.HasPrefix(kv, boot.EnvKeepGoing+"=")
	})
}

func (j *job) event(ev boot.Event) []action {
	switch ev.Kind {
	case boot.EventAbort:
		j.opt.Logger.Info("launch: rank aborted the job", "rank", ev.Rank, "code", ev.Code, "message", ev.Message)
		return j.pol.abort(ev.Rank, ev.Code, ev.Message)
	case boot.EventLost:
		j.opt.Logger.Info("launch: rank left without saying goodbye", "rank", ev.Rank)
		return j.pol.lost(ev.Rank)
	}
	return nil
}

func (j *job) logExit(ex rankExit) {
	if ex.status.sig != 0 {
		j.opt.Logger.Debug("launch: rank killed", "rank", ex.rank, "signal", ex.status.sig)
	} else {
		j.opt.Logger.Debug("launch: rank exited", "rank", ex.rank, "status", ex.status.code)
	}
}

// finish waits for what the ranks left behind to be reaped and their
// output forwarded, then runs the cleanup hook.
func (j *job) finish() {
	j.reapers.Wait()
	j.out.drain(j.opt.KillGrace)
	// Shared-memory files of ranks that died before removing them.
	if err := shm.RemoveJobFiles(shm.DefaultDir, j.id); err != nil {
		j.opt.Logger.Warn("launch: removing the job's shared memory files", "err", err)
	}
	if j.opt.Cleanup != nil {
		j.opt.Cleanup()
	}
}
