package launch

// Keep-going (Options.KeepGoing): a rank that ends without saying goodbye
// is lost, not failed. The launcher tells the other ranks through the KVS,
// reports the loss once its cause is known, and lets the job go on; the
// job ends when every rank has exited. Only while nothing else has begun
// ending the job: after an abort, a failure, a forwarded signal or a
// cancellation, every exit counts as without keep-going.

// goesOn reports whether a rank's loss leaves the job running: keep-going
// and nothing has started ending it.
func (p *policy) goesOn() bool { return p.keepGoing && p.stage == stageRun }

// bye: rank r said BYE to the KVS. Run feeds it before r's exit (the
// rank's Close waits for the BYE's answer), so that an exit with an error
// after goodbye is a failure and not a loss.
func (p *policy) bye(r int) { p.byes[r] = true }

// lose records rank r as lost with e; settled says whether e's cause is
// final (the rank has exited), else its exit settles it. The other ranks
// are told at once.
func (p *policy) lose(r int, e *RankError, settled bool) []action {
	p.losses[r] = e
	p.nlost++
	if p.firstLoss == nil {
		p.firstLoss = e
	}
	p.lossOrder = append(p.lossOrder, r)
	acts := []action{{tell: true, rank: r}}
	if settled {
		p.settled[r] = true
		acts = append(acts, p.reports()...)
	}
	return acts
}

// reports returns the reports of the losses now settled, in the order the
// losses were found, holding a loss's report until every loss found
// before it is settled: the ranks that go on may exit because of a loss
// (the survivors of a job where all are lost), and their exits can reach
// the launcher before the first one's.
func (p *policy) reports() []action {
	var acts []action
	for p.nreported < len(p.lossOrder) && p.settled[p.lossOrder[p.nreported]] {
		acts = append(acts, action{report: p.losses[p.lossOrder[p.nreported]]})
		p.nreported++
	}
	return acts
}

// settle: rank r, lost while it was running, exited with st: the loss is
// reported with its cause — the status, unless the launcher had signalled
// the rank itself (the job was ending by then).
func (p *policy) settle(r int, st exitStatus) []action {
	if p.settled[r] {
		return nil
	}
	p.settled[r] = true
	e := p.losses[r]
	if !p.signaled[r] {
		if st.ok() {
			e.ExitCode = 0
		} else {
			*e = *statusError(r, st)
		}
	}
	return p.reports()
}
