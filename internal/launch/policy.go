package launch

import (
	"fmt"
	"syscall"
	"time"
)

// exitStatus is how a rank process ended.
type exitStatus struct {
	code int            // exit status, when sig is 0
	sig  syscall.Signal // the signal that killed it, or 0
}

func (s exitStatus) ok() bool { return s.sig == 0 && s.code == 0 }

// stage is how far the launcher has gone in ending the job.
type stage int

const (
	stageRun   stage = iota // nothing has failed
	stageGrace              // a rank failed; the others may still finish
	stageTerm               // SIGTERM (or a forwarded signal) sent
	stageKill               // SIGKILL sent
)

// action is what the policy asks Run to do.
type action struct {
	signal syscall.Signal // send to every running rank's process group, then report sent
	timer  time.Duration  // arm the escalation timer
	// tell: keep-going, rank is lost: tell every other rank still
	// connected to the KVS (boot.Server.ReportLost).
	tell bool
	rank int
	// report: keep-going, a loss whose cause is now known, for
	// Options.OnLost.
	report *RankError
}

// policy decides when and how to end a job and who is to blame. It does no
// I/O: Run feeds it what happens (exits, KVS events, signals, cancellation,
// timer) and carries out the actions it returns, so the rules are tested
// without processes (policy_test.go).
//
// Blame goes to the first failure observed, with one exception: during the
// grace period a crash (a rank killed by a signal the launcher did not
// send) takes the blame from a rank that exited, with an error or without
// goodbye. Ranks that notice a crashed peer exit with
// an error themselves, and on a busy machine the launcher may see one of
// those exits before the crash that caused it. A rank that loses its KVS
// connection while still running is failing from that moment; its exit
// status, when it comes before the launcher signalled it, says how.
type policy struct {
	grace    time.Duration
	running  []bool
	nrunning int
	exited   []bool
	status   []exitStatus
	signaled []bool // the launcher signalled the rank while it was alive (sent)
	stage    stage
	first    *RankError
	lostRank int   // the rank whose loss is first, awaiting its exit; -1
	canceled error // ctx ended: the job was stopped from outside

	// Keep-going (Options.KeepGoing) state; see keepgoing.go.
	keepGoing bool
	byes      []bool       // the rank said BYE before it exited
	losses    []*RankError // each lost rank's loss, nil for the others
	settled   []bool       // the loss's cause is known
	// lossOrder lists the lost ranks in the order found; the first
	// nreported have been reported (keepgoing.go, reports).
	lossOrder []int
	nreported int
	nlost     int        // ranks lost so far
	firstLoss *RankError // the first loss, Run's error if every rank is lost
}

func newPolicy(n int, grace time.Duration) *policy {
	p := &policy{
		grace:    grace,
		running:  make([]bool, n),
		nrunning: n,
		exited:   make([]bool, n),
		status:   make([]exitStatus, n),
		signaled: make([]bool, n),
		lostRank: -1,
		byes:     make([]bool, n),
		losses:   make([]*RankError, n),
		settled:  make([]bool, n),
	}
	for i := range p.running {
		p.running[i] = true
	}
	return p
}

// done reports whether every rank has exited.
func (p *policy) done() bool { return p.nrunning == 0 }

// result is Run's error: the first failure, else the cancellation, else
// the first loss if every rank was lost (keep-going), else nil.
func (p *policy) result() error {
	switch {
	case p.first != nil:
		return p.first
	case p.canceled != nil:
		return fmt.Errorf("launch: job stopped: %w", p.canceled)
	case p.nlost > 0 && p.nlost == len(p.running):
		return p.firstLoss
	}
	return nil
}

// signalRunning returns the action that sends sig to every running rank.
func (p *policy) signalRunning(sig syscall.Signal) action { return action{signal: sig} }

// sent records that a signal reached rank r while it was alive, so that
// its loss and its exit are the launcher's doing, not a failure of its own.
// Run reports it from the process's state, not from when it gets to the
// rank's exit, so blame does not depend on scheduling.
func (p *policy) sent(r int) { p.signaled[r] = true }

// fail records a failure and starts ending the job.
func (p *policy) fail(e *RankError) []action {
	if p.canceled == nil && (p.first == nil || p.stage == stageGrace && crash(e) && !crash(p.first)) {
		p.first = e
	}
	if p.stage == stageRun {
		p.stage = stageGrace
		return []action{{timer: p.grace}}
	}
	return nil
}

// exit: rank r's process ended with st.
func (p *policy) exit(r int, st exitStatus) []action {
	if !p.running[r] {
		return nil
	}
	p.running[r], p.exited[r], p.status[r] = false, true, st
	p.nrunning--
	if p.losses[r] != nil {
		return p.settle(r, st) // lost while running: its exit says how
	}
	if p.goesOn() && !st.ok() && !p.byes[r] {
		return p.lose(r, statusError(r, st), true)
	}
	if p.lostRank == r {
		p.lostRank = -1
		if !p.signaled[r] {
			// The exit explains the loss: report it as it is.
			if st.ok() {
				p.first.ExitCode = 0
			} else {
				*p.first = *statusError(r, st)
			}
		}
		return nil
	}
	if !st.ok() {
		return p.fail(statusError(r, st))
	}
	return nil
}

// crash reports whether e is a rank killed by a signal rather than one
// that exited. (A lost KVS connection alone does not say: every rank that
// exits without goodbye loses it.)
func crash(e *RankError) bool { return e.Signal != 0 }

func statusError(r int, st exitStatus) *RankError {
	if st.sig != 0 {
		return &RankError{Rank: r, ExitCode: -1, Signal: st.sig, Cause: CauseExit}
	}
	return &RankError{Rank: r, ExitCode: st.code, Cause: CauseExit}
}

// lost: rank r's KVS connection ended without BYE.
func (p *policy) lost(r int) []action {
	switch {
	case p.losses[r] != nil:
		return nil // lost already, by its exit
	case p.goesOn() && !p.signaled[r] && !p.exited[r]:
		return p.lose(r, &RankError{Rank: r, ExitCode: -1, Cause: CauseLost}, false)
	case p.goesOn() && p.exited[r] && p.status[r].ok():
		return p.lose(r, &RankError{Rank: r, ExitCode: 0, Cause: CauseLost}, true)
	}
	if p.signaled[r] {
		return nil // the launcher told it to stop; its exit says how
	}
	if p.exited[r] {
		if !p.status[r].ok() {
			return nil // its exit is the failure, already counted
		}
		return p.fail(&RankError{Rank: r, ExitCode: 0, Cause: CauseLost})
	}
	e := &RankError{Rank: r, ExitCode: -1, Cause: CauseLost}
	acts := p.fail(e)
	if p.first == e {
		p.lostRank = r // its exit status will say how it was lost
	}
	return acts
}

// abort: rank r asked to end the job.
func (p *policy) abort(r, code int, msg string) []action {
	return p.fail(&RankError{Rank: r, ExitCode: code, Cause: CauseAbort, Message: msg})
}

// forward: the launcher received sig; the ranks get it too, and SIGKILL
// after the grace if they stay.
func (p *policy) forward(sig syscall.Signal) []action {
	acts := []action{p.signalRunning(sig)}
	if p.stage < stageTerm {
		p.stage = stageTerm
		acts = append(acts, action{timer: p.grace})
	}
	return acts
}

// cancel: Run's context ended.
func (p *policy) cancel(err error) []action {
	if p.canceled == nil {
		p.canceled = err
	}
	if p.stage < stageTerm {
		p.stage = stageTerm
		return []action{p.signalRunning(syscall.SIGTERM), {timer: p.grace}}
	}
	return nil
}

// timer: the escalation timer fired.
func (p *policy) timer() []action {
	switch p.stage {
	case stageGrace:
		p.stage = stageTerm
		return []action{p.signalRunning(syscall.SIGTERM), {timer: p.grace}}
	case stageTerm:
		p.stage = stageKill
		return []action{p.signalRunning(syscall.SIGKILL)}
	}
	return nil
}
