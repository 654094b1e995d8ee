package halo

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/commtune/commtune/internal/tune"
)

// Run-time selection of a halo exchange's implementation (seed 003): the
// Halos of one Cart with the same array shape share one Selection, a
// tune.Adaptive that explores (a race among the Prior's implementations
// probing the others later, brute force or performance hypotheses),
// settles on a winner, watches it, and explores again when its time
// drifts. Every rank runs the same implementation at every exchange because
// every rank feeds its Adaptive the same sequence of calls; the only
// agreement needed is one MAX allreduce per decision (and per window of
// the watch), on the communicator of the Halo whose exchange completes the
// measurement, and one broadcast of the persisted winner, if any, at the
// first exchange.

// Settings is how a rank's Halos select their implementation.
type Settings struct {
	Method   string // "learn", "brute", "hypothesis" or an implementation's name
	Samples  int    // measurements of each implementation (hypothesis)
	Order    string // "consecutive" measures each candidate's samples in a row
	Path     string // the decisions file; "" keeps nothing
	Platform string // the platform fingerprint's id, checked against the file's
}

// Agreement is what a Selection needs of the communicator whose exchange
// completes a measurement.
type Agreement interface {
	Rank() int
	// Bcast copies rank 0's v into every rank's v.
	Bcast(ctx context.Context, v []float64) error
	// Max sets out to the element-wise maximum of every rank's in.
	Max(ctx context.Context, in, out []float64) error
}

// Selection is the selection shared by the Halos of one Cart with one
// array shape.
type Selection struct {
	mu     sync.Mutex
	key    string // the persistence key: topology, transports, shape
	a      *tune.Adaptive
	agreed bool // the persisted winner, if any, has been agreed on
	set    Settings
	saved  int // selections already written to the decisions file
}

// NewSelection starts a selection among every implementation, kept under
// key in the decisions file.
func NewSelection(key string, set Settings) (*Selection, error) {
	a, err := tune.NewAdaptive(Registry().Entries(), tune.AdaptiveConfig{Method: set.Method, First: Prior(),
		Hypothesis: tune.HypothesisConfig{Samples: set.Samples, Consecutive: set.Order == "consecutive"}})
	if err != nil {
		return nil, err
	}
	return &Selection{key: key, a: a, set: set}, nil
}

// Next returns the implementation the next exchange runs, agreeing first,
// at the selection's first exchange, on the winner persisted by an
// earlier job: rank 0 reads it and broadcasts it on comm.
func (sel *Selection) Next(ctx context.Context, comm Agreement) (string, error) {
	sel.mu.Lock()
	defer sel.mu.Unlock()
	if !sel.agreed {
		if err := sel.agree(ctx, comm); err != nil {
			return "", err
		}
		sel.agreed = true
	}
	return sel.a.Next(), nil
}

// agree starts the selection on the persisted winner when rank 0 has one.
// Without a decisions file no rank has one, and nothing is sent.
func (sel *Selection) agree(ctx context.Context, comm Agreement) error {
	if sel.set.Path == "" {
		return nil
	}
	names := ImplNames()
	msg := []float64{-1, 0} // the winner's index among names, its time
	if comm.Rank() == 0 {
		m, err := tune.LoadDecisions(sel.set.Path, sel.set.Platform)
		if err != nil {
			fmt.Fprintf(os.Stderr, "commtune: ignoring halo decisions: %v\n", err)
		}
		if d, ok := m[sel.key]; ok && d.Method == sel.set.Method {
			if i := slices.Index(names, d.Winner); i >= 0 {
				msg[0], msg[1] = float64(i), d.Seconds
			}
		}
	}
	if err := comm.Bcast(ctx, msg); err != nil {
		return fmt.Errorf("commtune: halo selection: agreeing on the persisted winner: %w", err)
	}
	if i := int(msg[0]); i >= 0 && i < len(names) {
		if err := sel.a.Resume(names[i], msg[1]); err != nil {
			return fmt.Errorf("commtune: halo selection: %w", err)
		}
		sel.saved = sel.a.Selections()
	}
	return nil
}

// Record gives the selection this rank's time for one run of name (an
// exchange, or a Timer's region) and carries out the reduction it asks
// for, on comm.
func (sel *Selection) Record(ctx context.Context, comm Agreement, name string, d time.Duration) error {
	sel.mu.Lock()
	defer sel.mu.Unlock()
	local, err := sel.a.Record(name, d.Seconds())
	if err != nil || local == nil {
		return err
	}
	global := make([]float64, len(local))
	if err := comm.Max(ctx, local, global); err != nil {
		return fmt.Errorf("commtune: halo selection: %w", err)
	}
	if _, err := sel.a.Reduced(global); err != nil {
		return fmt.Errorf("commtune: halo selection: %w", err)
	}
	if sel.a.Selections() > sel.saved {
		sel.saved = sel.a.Selections()
		if comm.Rank() == 0 && sel.set.Path != "" {
			sel.save()
		}
	}
	return nil
}

// save writes the winner to the decisions file; a failure costs one line
// on stderr, as the decision only tunes.
func (sel *Selection) save() {
	w, secs := sel.a.Winner()
	d := tune.Decision{Winner: w, Seconds: secs, Method: sel.set.Method, Calls: sel.a.Calls(),
		Selections: sel.a.Selections(), Means: sel.a.Means(), Explain: sel.a.Explain(), At: time.Now().UTC()}
	if err := tune.SaveDecision(sel.set.Path, sel.set.Platform, sel.key, d); err != nil {
		fmt.Fprintf(os.Stderr, "commtune: halo decision not saved: %v\n", err)
	}
}

// Status describes where a selection stands (commtune.HaloSelection).
type Status struct {
	Method     string
	Impl       string
	Exploring  bool
	Calls      int
	Selections int
	Explain    []string
}

// Status returns where the selection stands.
func (sel *Selection) Status() Status {
	sel.mu.Lock()
	defer sel.mu.Unlock()
	return Status{Method: sel.set.Method, Impl: sel.a.Next(), Exploring: sel.a.Exploring(),
		Calls: sel.a.Calls(), Selections: sel.a.Selections(), Explain: sel.a.Explain()}
}
