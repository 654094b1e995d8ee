// Package nodecoll runs the small collectives of ranks that share memory
// as writes and reads of that memory, with no message, request, tag or
// matching: what MPICH's release_gather and Open MPI's coll/xhc do on a
// node.
//
// Every rank owns a part (Layout.PartSize bytes) that only it writes and
// every rank reads: a header line, then Slots slots of SlotSize bytes. A
// call numbered s (1, 2, … on every rank alike) publishes into slot
// s mod Slots its signature, its data, and last the word seq = s. A rank
// waiting for rank r's part of call s spins on that word. A rank publishes
// every call in which it gives data or the others wait for it; one that
// gives nothing (a Bcast's or Scatter's reader, a Reduce's or Gather's
// root) publishes one call in Slots/4, and every rank publishes each call
// whose number is a multiple of Slots/4. A slot's word thus also says how
// far its owner has come: a rank publishes call s+1 only after it
// finished call s.
//
// A slot is written again Slots calls later; before that its owner knows
// that every rank finished the call it held (it entered a later one). A
// call in which a rank waits for every other (Barrier, Allreduce,
// Allgather) tells it so at no cost; a root that broadcasts over and over
// runs ahead of its slowest reader by at most Slots-Slots/4 calls.
//
// The memory may be mapped by processes (a part per process, in a shared
// file) or be ordinary memory of one process (goroutine ranks): the same
// code runs on both.
package nodecoll

import (
	"errors"
	"fmt"
	"sync/atomic"
	"unsafe"
)

// Line is the cache line size the layout aligns to.
const Line = 64

// Slot header: the sequence word, the signature's two words, a word of
// the bytes of data (low 16 bits) and a hash of the signature of the
// publisher's call before (the other 48); the data follows, on the same
// line for calls of up to 32 bytes.
const (
	offSeq  = 0
	offSig  = 8
	offLen  = 24
	offData = 32
)

// abortBit in a slot's sequence word says its owner left the
// communicator's calls on error: whoever waits for it stops.
const abortBit = 1 << 63

// Header line of a part: the count of peers sleeping on one of the part's
// words, which the owner wakes after publishing; the call in which the
// owner left the calls (Abort), set before its abandon marks.
const (
	offSleepers  = 0
	offAbortedAt = 8
)

// Layout is how a part is laid out.
type Layout struct {
	Slots    int // calls a part holds at once (≥ 2)
	SlotSize int // bytes per slot, header included (a multiple of Line)
}

// DefaultLayout holds sixteen calls of up to 2016 bytes each per rank
// (32 KiB a rank): a root may run fifteen broadcasts (leaves fifteen
// reduces) ahead of its slowest peer. With more ranks than processors the
// further a rank runs ahead, the fewer times the ranks trade processors:
// 4 ranks on 2 processors took 4.2 µs per 8-byte Bcast with four slots,
// 2.3 µs with sixteen.
var DefaultLayout = Layout{Slots: 16, SlotSize: 2048}

// PartSize returns the bytes each rank's part takes.
func (l Layout) PartSize() int { return Line + l.Slots*l.SlotSize }

// MaxData returns the most bytes a rank publishes in one call.
func (l Layout) MaxData() int { return l.SlotSize - offData }

func (l Layout) check() error {
	if l.Slots < 2 || l.SlotSize < 2*Line || l.SlotSize%Line != 0 {
		return fmt.Errorf("nodecoll: layout of %d slots of %d bytes: want at least 2 slots of a whole number (≥ 2) of %d-byte lines", l.Slots, l.SlotSize, Line)
	}
	return nil
}

// Sig is what every rank of a call must agree on (operation, root, size),
// in two words; the caller encodes it.
type Sig [2]uint64

// A Reducer combines src into dst: dst = src op dst when srcFirst, else
// dst op src.
type Reducer func(dst, src []byte, srcFirst bool)

// ErrMismatch is the error of a call in which ranks disagree on the
// signature or the data size.
var ErrMismatch = errors.New("nodecoll: ranks disagree on the call")

// ErrAborted is the error of a call a peer abandoned.
var ErrAborted = errors.New("nodecoll: a peer abandoned the call")

// Group is one rank's handle on the parts of a communicator's ranks. Its
// calls must be made one at a time, in the same order on every rank.
type Group struct {
	parts [][]byte // parts[r]: rank r's, mapped here
	rank  int
	lay   Layout
	seq   uint64 // calls begun
	// known: every rank has finished every call up to it.
	known uint64
	w     *Waiter
	err   error // why the group stopped (Abort or a failed call)
	// sig and prev: the signatures of the running call and of the one
	// before, which every publication carries a hash of (prevHash).
	sig, prev Sig
}

// New returns rank's handle on parts, every one l.PartSize() bytes,
// aligned on Line, zeroed when the first rank begins; w waits.
func New(parts [][]byte, rank int, l Layout, w *Waiter) (*Group, error) {
	if err := l.check(); err != nil {
		return nil, err
	}
	if rank < 0 || rank >= len(parts) {
		return nil, fmt.Errorf("nodecoll: rank %d of %d", rank, len(parts))
	}
	for r, p := range parts {
		if len(p) < l.PartSize() {
			return nil, fmt.Errorf("nodecoll: rank %d's part holds %d bytes, want %d", r, len(p), l.PartSize())
		}
		if uintptr(unsafe.Pointer(&p[0]))%Line != 0 {
			return nil, fmt.Errorf("nodecoll: rank %d's part is not aligned on %d bytes", r, Line)
		}
	}
	return &Group{parts: parts, rank: rank, lay: l, w: w}, nil
}

// Size returns the number of ranks.
func (g *Group) Size() int { return len(g.parts) }

// Rank returns the calling rank.
func (g *Group) Rank() int { return g.rank }

// Layout returns the parts' layout.
func (g *Group) Layout() Layout { return g.lay }

// Calls returns how many calls the group has begun.
func (g *Group) Calls() uint64 { return g.seq }

// word returns the 8-byte word at off in rank r's part.
func (g *Group) word(r, off int) *atomic.Uint64 {
	return (*atomic.Uint64)(unsafe.Pointer(&g.parts[r][off]))
}

// slotOff returns the offset of call s's slot in a part.
func (g *Group) slotOff(s uint64) int {
	return Line + int(s%uint64(g.lay.Slots))*g.lay.SlotSize
}

// seqWord returns rank r's sequence word of call s's slot.
func (g *Group) seqWord(r int, s uint64) *atomic.Uint64 { return g.word(r, g.slotOff(s)+offSeq) }

// sleepers returns the count of waiters sleeping on rank r's words.
func (g *Group) sleepers(r int) *atomic.Uint32 {
	return (*atomic.Uint32)(unsafe.Pointer(&g.parts[r][offSleepers]))
}

// abortedAt returns rank r's word of the call it left the calls in.
func (g *Group) abortedAt(r int) *atomic.Uint64 { return g.word(r, offAbortedAt) }

// data returns rank r's n bytes of data of call s.
func (g *Group) data(r int, s uint64, n int) []byte {
	o := g.slotOff(s) + offData
	return g.parts[r][o : o+n : o+n]
}

// plain returns the 8-byte word at off in rank r's part, for the words a
// slot's sequence word orders (written before it, read after it).
func (g *Group) plain(r, off int) *uint64 { return (*uint64)(unsafe.Pointer(&g.parts[r][off])) }

// sigOf reads rank r's signature, data length and hash of its call
// before, of call s.
func (g *Group) sigOf(r int, s uint64) (sig Sig, n int, prev uint64) {
	o := g.slotOff(s)
	lw := *g.plain(r, o+offLen)
	return Sig{*g.plain(r, o+offSig), *g.plain(r, o+offSig+8)}, int(lw & lenMask), lw >> lenBits
}

// The length word: bytes of data in its low lenBits bits, prevHash above.
const (
	lenBits = 16
	lenMask = 1<<lenBits - 1
)

// prevHash folds a signature into the 48 bits a slot's length word has
// left: two ranks whose calls before differ publish different hashes but
// once in 2^48.
func prevHash(s Sig) uint64 {
	h := s[0]*0x9e3779b97f4a7c15 ^ (s[1]+0x632be59bd9b4e019)*0xbf58476d1ce4e5b9
	return (h ^ h>>29) >> lenBits
}
