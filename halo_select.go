package commtune

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/commtune/commtune/internal/halo"
	"github.com/commtune/commtune/internal/tune"
)

// Run-time selection of a halo exchange's implementation (seed 003): the
// Halos of one Cart with the same array shape share one tune.Adaptive,
// which explores (brute force or performance hypotheses), settles on a
// winner, watches it, and explores again when its time drifts. Every rank
// runs the same implementation at every exchange because every rank feeds
// its Adaptive the same sequence of calls; the only agreement needed is
// one MAX allreduce per decision (and per window of the watch), on the
// communicator of the Halo whose exchange completes the measurement, and
// one broadcast of the persisted winner, if any, at the first exchange.

// haloSettings is what an endpoint's Halos take from its Config.
type haloSettings struct {
	method   string // HaloSelectBrute, HaloSelectHypothesis or an implementation's name
	samples  int
	order    string // Config.HaloOrder
	path     string // the decisions file; "" keeps nothing
	platform string // the platform fingerprint's id, checked against the file's
}

// haloSettingsFor derives the endpoint's halo settings once its transports
// are known: like the lottery's state, decisions persist by default only
// for jobs of several processes, whose times say something of a real
// job's; an explicit path is used by every job.
func (ep *endpoint) haloSettingsFor(cfg Config) {
	ep.halo = haloSettings{method: cfg.HaloSelect, samples: cfg.HaloSamples, order: cfg.HaloOrder}
	if cfg.HaloState == HaloStateOff {
		return
	}
	fp := cfg.Platform()
	ep.halo.platform = fp.ID
	if cfg.HaloState != "" {
		ep.halo.path = cfg.HaloState
		return
	}
	if ep.eng.Size() < 2 || ep.Transport((ep.eng.Rank()+1)%ep.eng.Size()) == "inproc" {
		return
	}
	path, err := cfg.HaloStatePath(fp)
	if err != nil {
		fmt.Fprintf(os.Stderr, "commtune: halo decisions are not kept (%v); set %s to a file path\n", err, EnvHaloState)
		return
	}
	ep.halo.path = path
}

// haloSelection is the selection shared by the Halos of one Cart with one
// array shape.
type haloSelection struct {
	mu     sync.Mutex
	key    string // the persistence key: topology, transports, shape
	method string
	a      *tune.Adaptive
	agreed bool // the persisted winner, if any, has been agreed on
	set    haloSettings
	saved  int // selections already written to the decisions file
}

// haloKey names a Halo's selection: the platform is the file's, the rest
// is here. Rank 0's view of the transports is the key's, as rank 0 alone
// reads and writes the file.
func haloKey(cart *Cart, s halo.Shape) string {
	var b strings.Builder
	fmt.Fprintf(&b, "halo/np=%d/dims=%s/periods=", cart.comm.Size(), joinInts(cart.dims))
	for _, p := range cart.periods {
		b.WriteByte("ot"[boolIndex(p)])
	}
	fmt.Fprintf(&b, "/transports=%s/extents=%s/width=%d/components=%d/elem=%d",
		cart.comm.transportMix(), joinInts(s.Extents), s.Width, s.Components, s.ElemSize)
	return b.String()
}

func boolIndex(b bool) int {
	if b {
		return 1
	}
	return 0
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, "x")
}

// selection returns the selection of cart's Halos of shape s under method,
// making it on first use.
func (cart *Cart) selection(s halo.Shape, set haloSettings) (*haloSelection, error) {
	base := haloKey(cart, s)
	key := base + "/select=" + set.method
	cart.mu.Lock()
	defer cart.mu.Unlock()
	if sel := cart.selections[key]; sel != nil {
		return sel, nil
	}
	a, err := tune.NewAdaptive(haloRegistry().Entries(), tune.AdaptiveConfig{Method: set.method,
		Hypothesis: tune.HypothesisConfig{Samples: set.samples, Consecutive: set.order == HaloOrderConsecutive}})
	if err != nil {
		return nil, err
	}
	sel := &haloSelection{key: base, method: set.method, a: a, set: set}
	if cart.selections == nil {
		cart.selections = map[string]*haloSelection{}
	}
	cart.selections[key] = sel
	return sel, nil
}

// next returns the implementation the next exchange runs, agreeing first,
// at the selection's first exchange, on the winner persisted by an
// earlier job: rank 0 reads it and broadcasts it on comm.
func (sel *haloSelection) next(ctx context.Context, comm *Comm) (string, error) {
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
func (sel *haloSelection) agree(ctx context.Context, comm *Comm) error {
	if sel.set.path == "" {
		return nil
	}
	names := HaloImpls()
	msg := []float64{-1, 0} // the winner's index among names, its time
	if comm.Rank() == 0 {
		m, err := tune.LoadDecisions(sel.set.path, sel.set.platform)
		if err != nil {
			fmt.Fprintf(os.Stderr, "commtune: ignoring halo decisions: %v\n", err)
		}
		if d, ok := m[sel.key]; ok && d.Method == sel.method {
			if i := slices.Index(names, d.Winner); i >= 0 {
				msg[0], msg[1] = float64(i), d.Seconds
			}
		}
	}
	if err := Bcast(ctx, comm, msg, 0); err != nil {
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

// record gives the selection this rank's time for one run of name (an
// exchange, or a Timer's region) and carries out the reduction it asks
// for, on comm.
func (sel *haloSelection) record(ctx context.Context, comm *Comm, name string, d time.Duration) error {
	sel.mu.Lock()
	defer sel.mu.Unlock()
	local, err := sel.a.Record(name, d.Seconds())
	if err != nil || local == nil {
		return err
	}
	global := make([]float64, len(local))
	if err := Allreduce(ctx, comm, local, global, Max); err != nil {
		return fmt.Errorf("commtune: halo selection: %w", err)
	}
	if _, err := sel.a.Reduced(global); err != nil {
		return fmt.Errorf("commtune: halo selection: %w", err)
	}
	if sel.a.Selections() > sel.saved {
		sel.saved = sel.a.Selections()
		if comm.Rank() == 0 && sel.set.path != "" {
			sel.save()
		}
	}
	return nil
}

// save writes the winner to the decisions file; a failure costs one line
// on stderr, as the decision only tunes.
func (sel *haloSelection) save() {
	w, secs := sel.a.Winner()
	d := tune.Decision{Winner: w, Seconds: secs, Method: sel.method, Calls: sel.a.Calls(),
		Selections: sel.a.Selections(), Means: sel.a.Means(), Explain: sel.a.Explain(), At: time.Now().UTC()}
	if err := tune.SaveDecision(sel.set.path, sel.set.platform, sel.key, d); err != nil {
		fmt.Fprintf(os.Stderr, "commtune: halo decision not saved: %v\n", err)
	}
}

// HaloSelection describes where a Halo's choice of implementation stands.
type HaloSelection struct {
	// Method is "brute", "hypothesis", or "fixed" for a Halo whose
	// implementation was named (WithHaloImpl, or Config.HaloSelect).
	Method string
	// Impl is the implementation the next exchange runs.
	Impl string
	// Exploring is true while implementations are being measured.
	Exploring bool
	// Calls is how many exchanges (or Timer regions) the latest
	// selection measured: 0 for a winner persisted by an earlier job.
	Calls int
	// Selections is how many selections have ended, a resumed one
	// included; more than one means the watch saw the winner's time drift.
	Selections int
	// Explain says what the selection did and why, one line per event.
	Explain []string
}

func (sel *haloSelection) status() HaloSelection {
	sel.mu.Lock()
	defer sel.mu.Unlock()
	return HaloSelection{Method: sel.method, Impl: sel.a.Next(), Exploring: sel.a.Exploring(),
		Calls: sel.a.Calls(), Selections: sel.a.Selections(), Explain: sel.a.Explain()}
}

// HaloTimer times a region of the program that the user marks, computation
// included, and attributes it to the implementations its Halos ran, as
// ADCL_Timer does: what gets judged is then the whole iteration, so an
// implementation that overlaps communication with computation gets
// credit for it. Halos attached to a Timer no longer time their own
// exchanges. Every rank must mark the same regions.
type HaloTimer struct {
	halos   []*Halo
	start   time.Time
	running bool
}

// NewHaloTimer attaches halos to a new Timer. A Halo belongs to at most one
// Timer; a Halo with a fixed implementation is accepted and ignored.
func NewHaloTimer(halos ...*Halo) (*HaloTimer, error) {
	t := &HaloTimer{}
	for i, h := range halos {
		if h == nil {
			return nil, fmt.Errorf("commtune: NewHaloTimer: Halo %d is nil", i)
		}
		if h.timer != nil {
			return nil, fmt.Errorf("commtune: NewHaloTimer: Halo %d already has a Timer", i)
		}
	}
	for _, h := range halos {
		h.timer = t
		t.halos = append(t.halos, h)
	}
	return t, nil
}

// Start marks the beginning of a timed region.
func (t *HaloTimer) Start() {
	t.start = time.Now()
	t.running = true
}

// Stop marks its end and records the region's time once for each
// selection among the Timer's Halos; a selection may then reduce across
// the ranks, so Stop is collective over them.
func (t *HaloTimer) Stop(ctx context.Context) error {
	if !t.running {
		return fmt.Errorf("commtune: HaloTimer.Stop without Start")
	}
	t.running = false
	d := time.Since(t.start)
	done := map[*haloSelection]bool{}
	for _, h := range t.halos {
		ran := h.ran
		h.ran = ""
		if h.sel == nil || ran == "" || done[h.sel] {
			continue
		}
		// Only a record moves a selection on: every Halo of it that ran
		// in the region ran the same implementation.
		done[h.sel] = true
		if err := h.sel.record(ctx, h.comm, ran, d); err != nil {
			h.fail(err)
			return err
		}
	}
	return nil
}
