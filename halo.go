package commtune

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/commtune/commtune/internal/comm"
	"github.com/commtune/commtune/internal/config"
	"github.com/commtune/commtune/internal/halo"
	"github.com/commtune/commtune/internal/observe"
)

// Halo is a persistent halo (ghost-cell) exchange of one array on a Cart,
// as ADCL's neighbourhood requests are: every rank owns an N-dimensional
// array of interior cells framed by a halo width cells deep, and an
// exchange fills each halo cell, edges and corners included, from the
// interior of the neighbour that owns it. Past an open border of the grid
// the halo keeps whatever it holds; across a periodic one it wraps around.
//
// NewHalo registers the array in place: an exchange reads the interior and
// writes the halo of the caller's slice, which must not be touched between
// Start and the end of Wait. An exchange is carried out by one of several
// implementations (HaloImpls), all of which give the same result.
//
// Every rank of the Cart must create its Halos in the same order, with the
// same implementation and agreeing shapes, and exchange them the same
// number of times and in the same order: some implementations block in
// Start until the neighbours start the same exchange. When ranks disagree
// on the shape, or one leaves an exchange (a lost peer, its context's
// end), every rank's exchange fails within about half a second, with no
// deadline needed (docs/halo.md). A Halo is not safe
// for concurrent use; distinct Halos on one Cart may have exchanges under
// way at once, as each has a communicator of its own.
type Halo struct {
	comm  *Comm
	cart  *Cart
	shape halo.Shape
	data  []byte
	nb    halo.Neighbors

	fixed string          // the implementation named for this Halo; "" when sel chooses
	sel   *halo.Selection // the selection shared with the Cart's Halos of this shape
	timer *HaloTimer      // the Timer that times this Halo's exchanges, if any
	execs map[string]*halo.Exec
	slab  halo.Slab // pack buffers the two-sided execs share: one exchange runs at a time

	x       *halo.Exec // the exchange under way
	name    string     // its implementation
	begun   time.Time  // when it started
	ran     string     // the implementation run since the Timer last stopped
	started bool
	err     error // the failure that ended an exchange; the Halo is unusable after it

	// An exchange is a call of comm, watched as collective calls are
	// (comm.Comm.Begin): call is its state while inCall, and sigs the
	// signature of each implementation run.
	call   comm.CallState
	inCall bool
	sigs   map[string]comm.Sig
}

// HaloOption adjusts NewHalo.
type HaloOption func(*haloOptions)

type haloOptions struct {
	method string // an implementation's name, or a selection method
}

// DefaultHaloImpl is the implementation listed first, measured first by a
// selection: every partner at once, nonblocking, data packed.
const DefaultHaloImpl = "IsendIrecv_aao_pack"

// WithHaloImpl makes the Halo use the named implementation, one of
// HaloImpls, instead of selecting one at run time; every rank must name
// the same one.
func WithHaloImpl(name string) HaloOption {
	return func(o *haloOptions) { o.method = name }
}

// WithHaloSelect makes the Halo select its implementation at run time
// with method, HaloSelectLearn, HaloSelectBrute or HaloSelectHypothesis,
// whatever Config.HaloSelect says; every rank must pass the same.
func WithHaloSelect(method string) HaloOption {
	return func(o *haloOptions) { o.method = method }
}

// HaloImpls returns the names of the halo exchange implementations, in the
// order they are registered.
func HaloImpls() []string { return halo.ImplNames() }

// NewHalo registers data, the calling rank's array, for halo exchanges on
// cart. extents are the interior cells per dimension of the Cart; the full
// array adds width cells on both sides of every dimension, is row-major
// (dimension 0 slowest, as the Cart numbers its ranks) and holds
// components values per cell, innermost. len(data) must equal the product
// of extents[d]+2·width times components. Neighbours must agree on the
// extents of the faces they share; in practice every rank passes the same
// extents, width and components.
//
// The exchanges travel on a Dup of cart.Comm() of the Halo's own, each
// message tagged with the direction it travels in, so they never match
// other traffic. NewHalo is thus collective: every rank of the Cart must
// call it in the same order relative to the other Dup, Split, Cart and
// Neighborhood calls on that communicator. It needs no communication, and
// on an argument error takes no Dup, so the ranks must agree on the
// arguments.
func NewHalo[T Number](cart *Cart, data []T, extents []int, width, components int, opts ...HaloOption) (*Halo, error) {
	if cart == nil {
		return nil, errors.New("commtune: NewHalo: nil Cart")
	}
	if err := cart.comm.check(); err != nil {
		return nil, err
	}
	o := haloOptions{method: cart.comm.in.Endpoint().Halo.Method}
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	selecting := config.IsHaloSelector(o.method)
	if _, ok := halo.LookupImpl(o.method); !ok && !selecting {
		return nil, fmt.Errorf("commtune: NewHalo: unknown implementation %q; want one of %s, or the selection %s",
			o.method, strings.Join(HaloImpls(), ", "), strings.Join(config.HaloSelectors, ", "))
	}
	if len(extents) != len(cart.dims) {
		return nil, fmt.Errorf("commtune: NewHalo: %d extents for a Cart of %d dimensions", len(extents), len(cart.dims))
	}
	s := halo.Shape{Extents: slices.Clone(extents), Width: width, Components: components, ElemSize: elemSize[T]()}
	if err := s.Validate(); err != nil {
		return nil, fmt.Errorf("commtune: NewHalo: %w", err)
	}
	if want := s.Cells() * components; len(data) != want {
		return nil, fmt.Errorf("commtune: NewHalo: data has %d elements, want %d: %v cells each with a halo of %d on both sides, times %d components",
			len(data), want, extents, width, components)
	}
	h := &Halo{cart: cart, shape: s, data: Bytes(data), nb: cartNeighbors(cart), execs: map[string]*halo.Exec{}}
	// Every geometry is planned now, so that a bad shape fails here and
	// not in the middle of a selection.
	for _, m := range []halo.Impl{{Partners: halo.AllAtOnce}, {Partners: halo.Pairwise}} {
		if _, err := m.Plan(s, h.nb); err != nil {
			return nil, fmt.Errorf("commtune: NewHalo: %w", err)
		}
	}
	if selecting {
		set := cart.comm.in.Endpoint().Halo
		set.Method = o.method
		sel, err := cart.selection(s, set)
		if err != nil {
			return nil, fmt.Errorf("commtune: NewHalo: %w", err)
		}
		h.sel = sel
	} else {
		h.fixed = o.method
	}
	// A communicator of its own, which revoking the Cart's revokes.
	in, err := cart.comm.in.DupTied()
	if err != nil {
		return nil, err
	}
	h.comm = wrap(in)
	if h.fixed != "" {
		if _, err := h.exec(h.fixed); err != nil {
			return nil, fmt.Errorf("commtune: NewHalo: %w", err)
		}
	}
	return h, nil
}

// signature is what ranks must agree on for an exchange with
// implementation name: the implementation and the shape's width,
// components and element size. Extents may differ between ranks (an
// uneven decomposition) as long as the faces neighbours share match;
// those that do not show as messages of the wrong size.
func (h *Halo) signature(name string) comm.Sig {
	if sig, ok := h.sigs[name]; ok {
		return sig
	}
	if h.sigs == nil {
		h.sigs = map[string]comm.Sig{}
	}
	s := h.shape
	sig := comm.TextSignature(fmt.Sprintf("halo/%s, %d dimensions, width %d, %d components of %d bytes",
		name, len(s.Extents), s.Width, s.Components, s.ElemSize))
	h.sigs[name] = sig
	return sig
}

// exec returns the executor of implementation name on h, made on first
// use: its plan, runs and buffers serve every later exchange.
func (h *Halo) exec(name string) (*halo.Exec, error) {
	if x := h.execs[name]; x != nil {
		return x, nil
	}
	m, ok := halo.LookupImpl(name)
	if !ok {
		return nil, fmt.Errorf("unknown halo implementation %q", name)
	}
	plan, err := m.Plan(h.shape, h.nb)
	if err != nil {
		return nil, err
	}
	g := halo.Grid{Coords: h.cart.coords, Dims: h.cart.dims, Periods: h.cart.periods}
	x, err := halo.NewExec(m, comm.HaloChannel(h.comm.in, &h.call), g, h.shape, h.data, plan, &h.slab)
	if err != nil {
		return nil, err
	}
	h.execs[name] = x
	return x, nil
}

// cartNeighbors returns the calling rank's neighbour at each offset of
// cart, with the plans' halo.ProcNull past an open border.
func cartNeighbors(cart *Cart) halo.Neighbors {
	me := cart.coords
	return func(o []int) int {
		at := make([]int, len(me))
		for d := range me {
			at[d] = me[d] + o[d]
		}
		r, err := cart.Rank(at) // wraps on periodic dimensions
		if err != nil {
			return halo.ProcNull
		}
		return r
	}
}

// Impl returns the name of the implementation h's next exchange uses.
func (h *Halo) Impl() string {
	if h == nil {
		return ""
	}
	if h.sel == nil {
		return h.fixed
	}
	return h.sel.Status().Impl
}

// Selection describes where h's choice of implementation stands.
func (h *Halo) Selection() HaloSelection {
	if h == nil {
		return HaloSelection{}
	}
	if h.sel == nil {
		return HaloSelection{Method: "fixed", Impl: h.fixed}
	}
	return HaloSelection(h.sel.Status())
}

var errNilHalo = errors.New("commtune: nil Halo")

// Start begins an exchange. The all-at-once implementations leave their
// receives (and IsendIrecv its sends) in flight for Wait; the pair ones,
// whose phases each send what the one before received, complete the
// exchange here. Starting a Halo already started is an error. After an
// exchange fails (ctx ending, a lost peer, ranks that disagree on shapes)
// the Halo is unusable: its messages may still be in flight and the ranks
// out of step. A ctx already ended starts nothing and leaves it usable.
func (h *Halo) Start(ctx context.Context) error {
	if h == nil {
		return errNilHalo
	}
	t := h.cart.comm.begin(opHaloStart)
	err := h.start(ctx)
	h.end(ctx, t, opHaloStart, err)
	return err
}

// start is Start, unobserved.
func (h *Halo) start(ctx context.Context) error {
	if h.err != nil {
		return fmt.Errorf("commtune: Halo unusable after a failed exchange: %w", h.err)
	}
	if h.started {
		return errors.New("commtune: Halo.Start: exchange already started; Wait for it first")
	}
	if err := ctx.Err(); err != nil {
		return err // nothing started, so the Halo stays usable
	}
	name := h.fixed
	if h.sel != nil {
		var err error
		if name, err = h.sel.Next(ctx, agreement{h.comm}); err != nil {
			return h.fail(err)
		}
	}
	x, err := h.exec(name)
	if err != nil {
		err = fmt.Errorf("commtune: Halo: %w", err)
		return h.fail(err)
	}
	h.x, h.name, h.ran = x, name, name
	h.begun = time.Now()
	err = h.comm.in.Begin(ctx, &h.call, h.signature(name))
	h.inCall = true
	if err != nil {
		return h.fail(err) // a peer has left this exchange already
	}
	if err := x.Start(ctx); err != nil {
		return h.fail(err)
	}
	h.started = true
	return nil
}

// Wait completes the exchange Start began. Waiting on a Halo not started
// is an error.
func (h *Halo) Wait(ctx context.Context) error {
	if h == nil {
		return errNilHalo
	}
	t := h.cart.comm.begin(opHaloWait)
	err := h.finish(ctx)
	h.end(ctx, t, opHaloWait, err)
	return err
}

// finish is Wait, unobserved.
func (h *Halo) finish(ctx context.Context) error {
	if h.err != nil {
		return fmt.Errorf("commtune: Halo unusable after a failed exchange: %w", h.err)
	}
	if !h.started {
		return errors.New("commtune: Halo.Wait: no exchange started")
	}
	h.started = false
	if err := h.x.Wait(ctx); err != nil {
		return h.fail(err)
	}
	h.endCall()
	if h.sel != nil && h.timer == nil {
		if err := h.sel.Record(ctx, agreement{h.comm}, h.name, time.Since(h.begun)); err != nil {
			return h.fail(err)
		}
	}
	return nil
}

// Exchange carries out a whole exchange: Start, then Wait.
func (h *Halo) Exchange(ctx context.Context) error {
	if h == nil {
		return errNilHalo
	}
	t := h.cart.comm.begin(opHaloExchange)
	err := h.start(ctx)
	if err == nil {
		err = h.finish(ctx)
	}
	h.end(ctx, t, opHaloExchange, err)
	return err
}

// end ends the observation of a Halo call: its path is the implementation
// that ran, chosen by the run-time selection ("learned") or fixed; Start's
// and Exchange's bytes are what the exchange sends to other ranks.
func (h *Halo) end(ctx context.Context, t observe.Token, op observe.Op, err error) {
	if !t.On() {
		return
	}
	by := "fixed"
	if h.sel != nil {
		by = "learned"
	}
	bytes := -1
	if h.x != nil && op != opHaloWait { // Start's or Exchange's: what the exchange sends
		bytes = h.x.SentBytes()
	}
	endOp(ctx, h.cart.comm.in, t, op, bytes, h.ran, by, err) // the program's communicator, whose Profile shows it
}

// fail ends a failed exchange and returns its error: what a peer said
// made it fail, when one did (explain), else err. It tells the other
// ranks why this one leaves before it withdraws what is still in flight,
// so that none of them waits for it.
func (h *Halo) fail(err error) error {
	if h.inCall {
		err = h.comm.in.Fail(&h.call, err)
	}
	h.err = err
	h.started = false
	if h.x != nil {
		h.x.Abort()
	}
	h.endCall()
	return err
}

// endCall ends the exchange's call.
func (h *Halo) endCall() {
	if h.inCall {
		h.comm.in.End(&h.call)
		h.inCall = false
	}
}

// HaloImplAttr describes one halo implementation: its name and attributes
// (partners, primitive, data), as the selectors see them.
type HaloImplAttr struct {
	Name  string
	Attrs map[string]string
}

// HaloImplAttrs returns every halo implementation with its attributes, in
// the order HaloImpls lists them.
func HaloImplAttrs() []HaloImplAttr {
	var out []HaloImplAttr
	for _, e := range halo.Registry().Entries() {
		out = append(out, HaloImplAttr{Name: e.Name, Attrs: e.AttrMap()})
	}
	return out
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

// HaloSelectors returns the methods of run-time selection WithHaloSelect
// and Config.HaloSelect take, the default first.
func HaloSelectors() []string { return slices.Clone(config.HaloSelectors) }
