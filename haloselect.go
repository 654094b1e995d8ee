package commtune

import (
	"context"
	"fmt"
	"strconv"
	"strings"

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

func (a agreement) Bcast(ctx context.Context, v []float64) error {
	return runNow(ctx)(bcastCall[float64](quietly(ctx), a.c, v, 0, nil))
}

func (a agreement) Max(ctx context.Context, in, out []float64) error {
	return runNow(ctx)(allreduceCall[float64](quietly(ctx), a.c, in, out, Max, nil))
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
