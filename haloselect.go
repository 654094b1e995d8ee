package commtune

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/commtune/commtune/internal/halo"
)

// The Halos of one Cart with the same array shape share one selection of
// their implementation (halo.Selection, seed 003), keyed by the Cart's
// topology, the transports and the shape.

// haloKey names a Halo's selection: the platform is the decisions file's,
// the rest is here. Rank 0's view of the transports is the key's, as rank
// 0 alone reads and writes the file.
func haloKey(cart *Cart, s halo.Shape) string {
	var b strings.Builder
	fmt.Fprintf(&b, "halo/np=%d/dims=%s/periods=", cart.comm.Size(), joinInts(cart.dims))
	for _, p := range cart.periods {
		if p {
			b.WriteByte('t')
		} else {
			b.WriteByte('o')
		}
	}
	fmt.Fprintf(&b, "/transports=%s/extents=%s/width=%d/components=%d/elem=%d",
		cart.comm.in.TransportMix(), joinInts(s.Extents), s.Width, s.Components, s.ElemSize)
	return b.String()
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, "x")
}

// selection returns the selection of cart's Halos of shape s under
// set.Method, making it on first use.
func (cart *Cart) selection(s halo.Shape, set halo.Settings) (*halo.Selection, error) {
	base := haloKey(cart, s)
	key := base + "/select=" + set.Method
	cart.mu.Lock()
	defer cart.mu.Unlock()
	if sel := cart.selections[key]; sel != nil {
		return sel, nil
	}
	sel, err := halo.NewSelection(base, set)
	if err != nil {
		return nil, err
	}
	if cart.selections == nil {
		cart.selections = map[string]*halo.Selection{}
	}
	cart.selections[key] = sel
	return sel, nil
}

// agreement is a Halo's communicator as its selection agrees on it.
type agreement struct{ c *Comm }

func (a agreement) Rank() int { return a.c.Rank() }

func (a agreement) Bcast(ctx context.Context, v []float64) error { return Bcast(ctx, a.c, v, 0) }

func (a agreement) Max(ctx context.Context, in, out []float64) error {
	return Allreduce(ctx, a.c, in, out, Max)
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
	done := map[*halo.Selection]bool{}
	for _, h := range t.halos {
		ran := h.ran
		h.ran = ""
		if h.sel == nil || ran == "" || done[h.sel] {
			continue
		}
		// Only a record moves a selection on: every Halo of it that ran
		// in the region ran the same implementation.
		done[h.sel] = true
		if err := h.sel.Record(ctx, agreement{h.comm}, ran, d); err != nil {
			h.fail(err)
			return err
		}
	}
	return nil
}
