package halo

import "strings"

// The implementations of a halo exchange, named and characterised as
// ADCL's neighbourhood exchanges are, so that a selector reasons on their
// attributes and a new variant is a new entry of Impls.

// Partners is how many neighbours an implementation talks to at once.
type Partners string

const (
	// AllAtOnce: every neighbour, corners included, in one phase (PlanAll).
	AllAtOnce Partners = "aao"
	// Pairwise: one dimension per phase (PlanPhased), and within it one
	// neighbour after the other.
	Pairwise Partners = "pair"
)

// Primitive is the point-to-point (or one-sided) calls an implementation
// moves the data with.
type Primitive string

const (
	IsendIrecv Primitive = "IsendIrecv" // post the receives, then the sends, then wait for all
	SendIrecv  Primitive = "SendIrecv"  // post the receives, send blocking, then wait for the receives
	SendRecv   Primitive = "SendRecv"   // blocking Send and Recv, in an order that cannot deadlock
	Sendrecv   Primitive = "Sendrecv"   // Sendrecv with each neighbour
	Put        Primitive = "Put"        // the owner puts into the reader's exposed receive box
	Get        Primitive = "Get"        // the reader reads the owner's send box in place
)

// Data is how the boxes, not contiguous in the array, travel.
type Data string

const (
	// Packed: each box is packed into a buffer of its own, allocated once,
	// and received boxes unpacked from one.
	Packed Data = "pack"
	// InPlace: each box travels in place as the list of its runs in the array
	// (MPI's derived datatypes), gathered into the message and scattered
	// from it with no pack copy.
	InPlace Data = "ddt"
)

// Attribute keys of an implementation, as a selector sees them.
const (
	AttrPartners  = "partners"
	AttrPrimitive = "primitive"
	AttrData      = "data"
)

// Impl is one halo exchange implementation.
type Impl struct {
	Partners  Partners
	Primitive Primitive
	Data      Data
}

// Impls lists the implementations in registration order, the default
// first: twelve two-sided, then the eight one-sided. Sending and receiving
// blocking with every partner at once has no order free of deadlock, so
// SendRecv and Sendrecv come in pairwise form only, as in ADCL.
var Impls = []Impl{
	{AllAtOnce, IsendIrecv, Packed},
	{AllAtOnce, SendIrecv, Packed},
	{Pairwise, IsendIrecv, Packed},
	{Pairwise, SendIrecv, Packed},
	{Pairwise, SendRecv, Packed},
	{Pairwise, Sendrecv, Packed},
	{AllAtOnce, IsendIrecv, InPlace},
	{AllAtOnce, SendIrecv, InPlace},
	{Pairwise, IsendIrecv, InPlace},
	{Pairwise, SendIrecv, InPlace},
	{Pairwise, SendRecv, InPlace},
	{Pairwise, Sendrecv, InPlace},
	{AllAtOnce, Put, Packed},
	{Pairwise, Put, Packed},
	{AllAtOnce, Get, Packed},
	{Pairwise, Get, Packed},
	{AllAtOnce, Put, InPlace},
	{Pairwise, Put, InPlace},
	{AllAtOnce, Get, InPlace},
	{Pairwise, Get, InPlace},
}

// Name returns the implementation's name, as ADCL spells it:
// primitive_partners_data.
func (m Impl) Name() string {
	return string(m.Primitive) + "_" + string(m.Partners) + "_" + string(m.Data)
}

// OneSided reports whether the implementation moves its data with Put or
// Get.
func (m Impl) OneSided() bool { return m.Primitive == Put || m.Primitive == Get }

// Plan returns the calling rank's plan for the implementation's geometry.
func (m Impl) Plan(s Shape, nb Neighbors) (Plan, error) {
	if m.Partners == AllAtOnce {
		return PlanAll(s, nb)
	}
	return PlanPhased(s, nb)
}

// ImplNames returns the names of Impls, in order.
func ImplNames() []string {
	names := make([]string, len(Impls))
	for i, m := range Impls {
		names[i] = m.Name()
	}
	return names
}

// LookupImpl returns the implementation named name.
func LookupImpl(name string) (Impl, bool) {
	for _, m := range Impls {
		if m.Name() == name {
			return m, true
		}
	}
	return Impl{}, false
}

// ImplList is ImplNames joined for a message: "a, b, c".
func ImplList() string { return strings.Join(ImplNames(), ", ") }

// Prior returns the implementations a learning selection races first:
// the packed two-sided ones, in the order of Impls. In-place boxes cost a
// gather per run and one-sided exchanges a synchronization each; on the
// grids of `commtune bench halo` over shared memory the best of these six
// was within 1.13 times the best of all (docs/halo.md). The others are
// probed once a winner runs, so a machine where the prior is wrong still
// finds its best.
func Prior() []string {
	var out []string
	for _, m := range Impls {
		if m.Data == Packed && !m.OneSided() {
			out = append(out, m.Name())
		}
	}
	return out
}
