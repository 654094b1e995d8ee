package job

import (
	"fmt"
	"os"

	"github.com/commtune/commtune/internal/config"
	"github.com/commtune/commtune/internal/tune"
)

// The lottery's learning outlives the job (seed 001 §6.1.3: read at start,
// written back at exit): every rank restores it from a state file when
// its endpoint is ready, and writes back what it learned since when the
// endpoint closes. Only a communicator's rank 0 draws and records, but any
// rank may be the rank 0 of a communicator split from the world; ranks
// that recorded nothing leave the file alone. Jobs of goroutine ranks
// (Local, for tests and embedded use) and single-rank jobs keep nothing:
// their times say little about a real job's.
//
// Several jobs may share the file: each adds only its own learning since
// it loaded the file, under a lock (tune.SaveState), so none is lost or
// counted twice. A file that cannot be read costs one line on stderr and
// an empty start; so does a failure to save, which does not fail Close:
// like the profile, the state only tunes, and the job's communication went
// through.

// tuneStore is where a rank's lottery keeps its learning between jobs.
type tuneStore struct {
	path     string
	platform string     // the platform fingerprint's id, checked against the file's
	base     tune.State // what was loaded, which the save must not count again
}

// KeepsTuneState reports whether this endpoint persists its lottery's
// learning: a rank of a job of several processes, with the lottery on.
// Call it once every transport is attached: goroutine ranks are told by
// their transport.
func (ep *Endpoint) KeepsTuneState() bool {
	if ep.Lottery == nil || ep.Eng.Size() < 2 {
		return false
	}
	return ep.Transport((ep.Eng.Rank()+1)%ep.Eng.Size()) != "inproc"
}

// openTuneState restores the lottery from the state file when this
// endpoint keeps one; a file it cannot use is one line on stderr.
func (ep *Endpoint) openTuneState(cfg config.Config) {
	if !ep.KeepsTuneState() {
		return
	}
	fp := cfg.Platform()
	path, err := cfg.TuneStatePath(fp)
	switch {
	case err != nil:
		fmt.Fprintf(os.Stderr, "commtune: the lottery's learning is not kept (%v); set %s to a file path\n", err, config.EnvTuneState)
		return
	case path == "":
		return
	}
	if warning := ep.LoadTuneState(path, fp.ID); warning != "" {
		fmt.Fprintln(os.Stderr, warning)
	}
}

// LoadTuneState restores the lottery from path, learned on platform, and
// keeps what it loaded as the base of the save at close. It returns the
// line to warn with when the file is unusable, the lottery then starting
// empty (and the save at close replacing a corrupt file).
func (ep *Endpoint) LoadTuneState(path, platform string) string {
	ep.tuneStore = &tuneStore{path: path, platform: platform}
	s, err := tune.LoadState(path, platform)
	if err == nil {
		err = ep.Lottery.Restore(s)
	}
	if err != nil {
		return fmt.Sprintf("commtune: ignoring the lottery's learning: %v; starting afresh", err)
	}
	ep.tuneStore.base = s
	return ""
}

// saveTuneState writes back what the lottery learned, if this endpoint
// keeps its learning; a failure is one line on stderr.
func (ep *Endpoint) saveTuneState() {
	if warning := ep.StoreTuneState(); warning != "" {
		fmt.Fprintln(os.Stderr, warning)
	}
}

// StoreTuneState saves the lottery's learning since LoadTuneState and
// returns the line to warn with if that failed.
func (ep *Endpoint) StoreTuneState() string {
	st := ep.tuneStore
	if st == nil {
		return ""
	}
	if err := tune.SaveState(st.path, st.platform, st.base, ep.Lottery.Snapshot()); err != nil {
		return fmt.Sprintf("commtune: the lottery's learning is not saved: %v", err)
	}
	return ""
}

// TuneStatePath returns the file this endpoint keeps its lottery's
// learning in, "" for none.
func (ep *Endpoint) TuneStatePath() string {
	if ep.tuneStore == nil {
		return ""
	}
	return ep.tuneStore.path
}

// DropTuneState makes the endpoint forget its state file: Close then
// saves nothing.
func (ep *Endpoint) DropTuneState() { ep.tuneStore = nil }
