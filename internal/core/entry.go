package core

import (
	"encoding/binary"
	"math"

	"github.com/commtune/commtune/internal/driver"
)

// A Packet frame's body is a sequence of entries (docs/wire-core.md). Each
// starts with an 8-byte prefix: kind, flags, reserved, and the length of the
// rest of the entry, so a parser can bound-check before reading and an
// aggregating strategy can concatenate entries without knowing what they
// are.
const (
	prefixLen = 8

	kindEager   = 1 // ctx, tag, seq, payload
	kindRTS     = 2 // ctx, tag, seq, size, sendID
	kindCTS     = 3 // sendID, region, accept
	kindCredit  = 4 // bytes
	kindCancel  = 5 // sendID
	kindRTSPull = 6 // ctx, tag, seq, size, sendID, addr: the receiver pulls the data
	kindFin     = 7 // sendID: the receiver pulled it all
	// kindWithdraw asks the receiver of an RTS-pull not to read the sender's
	// buffer: ctx, seq (of the RTS-pull), sendID. It answers kindWithdrawn
	// if it had not begun to read, else nothing (its FIN or CTS follows).
	kindWithdraw  = 8
	kindWithdrawn = 9 // sendID: the receiver will not read it
	// kindPost exposes a region of the sender's memory to one put of the
	// receiver's (rma.go): ctx, tag, seq, size, region.
	kindPost = 10
	// kindRefuse answers a post whose size the put does not fill: region,
	// the put's size. The exposed region fails.
	kindRefuse = 11
	// kindArrived answers an RTS flagged flagReport once its data has
	// landed: region, and the ns from the CTS to the last byte. The
	// sender's scheduler scores the split that carried it.
	kindArrived = 12
	// kindAbort tells a peer the job is aborted: i64 exit code. The peer
	// exits with it (Engine.SetAbortHandler).
	kindAbort = 13
	// kindRevoke tells a peer that a communicator is revoked: u64 its key
	// (its point-to-point context). The peer revokes it too and tells the
	// others it reaches (revoke.go).
	kindRevoke = 14

	// flagReport, in an RTS's flags byte, asks for a kindArrived.
	flagReport = 1
	// flagRevoked, in a Cancel's or a Withdraw's flags byte, says the
	// sender withdraws because the communicator was revoked: a receive
	// that had matched fails with ErrRevoked, not a WithdrawnError.
	flagRevoked = 2

	eagerHeaderLen = prefixLen + 16 // + ctx u64, tag i32, seq u32
	rtsLen         = prefixLen + 32 // + ctx, tag, seq, size u64, sendID u64
	ctsLen         = prefixLen + 24 // + sendID, region, accept
	creditLen      = prefixLen + 8
	cancelLen      = prefixLen + 8
	rtsPullLen     = rtsLen + 8
	finLen         = prefixLen + 8
	withdrawLen    = prefixLen + 24 // + ctx u64, seq u32, reserved u32, sendID u64
	withdrawnLen   = prefixLen + 8
	postLen        = rtsLen         // + ctx, tag, seq, size, region
	refuseLen      = prefixLen + 16 // + region, size
	arrivedLen     = prefixLen + 16 // + region, ns
	abortLen       = prefixLen + 8  // + code
	revokeLen      = prefixLen + 8  // + key

	maxHeaderLen = rtsPullLen

	// maxMessage bounds a message's announced size: a Go slice holds at
	// most MaxInt bytes, so a larger size can only come from a broken peer.
	maxMessage = math.MaxInt
)

var le = binary.LittleEndian

// entry is one decoded entry; payload aliases the packet body.
type entry struct {
	kind    uint8
	flags   uint8 // RTS: flagReport
	ctx     uint64
	tag     int32
	seq     uint32
	size    uint64 // RTS: message size; CTS: accepted bytes; Credit: bytes
	id      uint64 // RTS, CTS, Cancel: sender's request id
	region  uint64 // CTS, Post, Refuse: receiver's region handle
	addr    uint64 // RTSPull: the sender's buffer address
	payload []byte // Eager
}

func putPrefix(b []byte, kind uint8, rest int) {
	b[0], b[1], b[2], b[3] = kind, 0, 0, 0
	le.PutUint32(b[4:], uint32(rest))
}

// putEagerHeader writes an eager header for a payload of n bytes into b
// (len ≥ eagerHeaderLen).
func putEagerHeader(b []byte, ctx uint64, tag int32, seq uint32, n int) {
	putPrefix(b, kindEager, 16+n)
	le.PutUint64(b[8:], ctx)
	le.PutUint32(b[16:], uint32(tag))
	le.PutUint32(b[20:], seq)
}

func putRTS(b []byte, ctx uint64, tag int32, seq uint32, size, id uint64) {
	putPrefix(b, kindRTS, rtsLen-prefixLen)
	le.PutUint64(b[8:], ctx)
	le.PutUint32(b[16:], uint32(tag))
	le.PutUint32(b[20:], seq)
	le.PutUint64(b[24:], size)
	le.PutUint64(b[32:], id)
}

func putRTSPull(b []byte, ctx uint64, tag int32, seq uint32, size, id, addr uint64) {
	putRTS(b, ctx, tag, seq, size, id)
	putPrefix(b, kindRTSPull, rtsPullLen-prefixLen)
	le.PutUint64(b[40:], addr)
}

func putPost(b []byte, ctx uint64, tag int32, seq uint32, size, region uint64) {
	putRTS(b, ctx, tag, seq, size, region)
	putPrefix(b, kindPost, postLen-prefixLen)
}

func putRefuse(b []byte, region, size uint64) {
	putPrefix(b, kindRefuse, refuseLen-prefixLen)
	le.PutUint64(b[8:], region)
	le.PutUint64(b[16:], size)
}

func putArrived(b []byte, region, ns uint64) {
	putPrefix(b, kindArrived, arrivedLen-prefixLen)
	le.PutUint64(b[8:], region)
	le.PutUint64(b[16:], ns)
}

func putAbort(b []byte, code int64) {
	putPrefix(b, kindAbort, abortLen-prefixLen)
	le.PutUint64(b[8:], uint64(code))
}

func putRevoke(b []byte, key uint64) {
	putPrefix(b, kindRevoke, revokeLen-prefixLen)
	le.PutUint64(b[8:], key)
}

func putFin(b []byte, id uint64) {
	putPrefix(b, kindFin, finLen-prefixLen)
	le.PutUint64(b[8:], id)
}

func putWithdraw(b []byte, ctx uint64, seq uint32, id uint64) {
	putPrefix(b, kindWithdraw, withdrawLen-prefixLen)
	le.PutUint64(b[8:], ctx)
	le.PutUint32(b[16:], seq)
	le.PutUint32(b[20:], 0)
	le.PutUint64(b[24:], id)
}

func putWithdrawn(b []byte, id uint64) {
	putPrefix(b, kindWithdrawn, withdrawnLen-prefixLen)
	le.PutUint64(b[8:], id)
}

func putCTS(b []byte, id, region, accept uint64) {
	putPrefix(b, kindCTS, ctsLen-prefixLen)
	le.PutUint64(b[8:], id)
	le.PutUint64(b[16:], region)
	le.PutUint64(b[24:], accept)
}

func putCredit(b []byte, n uint64) {
	putPrefix(b, kindCredit, creditLen-prefixLen)
	le.PutUint64(b[8:], n)
}

func putCancel(b []byte, id uint64) {
	putPrefix(b, kindCancel, cancelLen-prefixLen)
	le.PutUint64(b[8:], id)
}

// flagsAllowed reports whether an entry of kind may carry flags.
func flagsAllowed(kind, flags uint8) bool {
	switch {
	case flags == 0:
		return true
	case kind == kindRTS:
		return flags == flagReport
	case kind == kindCancel, kind == kindWithdraw:
		return flags == flagRevoked
	}
	return false
}

// nextEntry decodes the entry at the start of body and returns the rest. It
// never panics and never allocates: every length is checked against what is
// there before it is used.
func nextEntry(body []byte, e *entry) (rest []byte, err error) {
	if len(body) < prefixLen {
		return nil, driver.ProtocolError("entry prefix truncated: %d bytes", len(body))
	}
	kind := body[0]
	if !flagsAllowed(kind, body[1]) || body[2] != 0 || body[3] != 0 {
		return nil, driver.ProtocolError("entry kind %d with flags %#x %#x %#x", kind, body[1], body[2], body[3])
	}
	n := uint64(le.Uint32(body[4:]))
	if n > uint64(len(body)-prefixLen) {
		return nil, driver.ProtocolError("entry length %d exceeds packet (%d left)", n, len(body)-prefixLen)
	}
	b := body[prefixLen : prefixLen+int(n)]
	rest = body[prefixLen+int(n):]
	want := -1 // exact length of fixed-size entries
	switch kind {
	case kindEager:
		if len(b) < 16 {
			return nil, driver.ProtocolError("eager entry of %d bytes", len(b))
		}
	case kindRTS:
		want = rtsLen - prefixLen
	case kindCTS:
		want = ctsLen - prefixLen
	case kindCredit:
		want = creditLen - prefixLen
	case kindCancel:
		want = cancelLen - prefixLen
	case kindRTSPull:
		want = rtsPullLen - prefixLen
	case kindFin:
		want = finLen - prefixLen
	case kindWithdraw:
		want = withdrawLen - prefixLen
	case kindWithdrawn:
		want = withdrawnLen - prefixLen
	case kindPost:
		want = postLen - prefixLen
	case kindRefuse:
		want = refuseLen - prefixLen
	case kindArrived:
		want = arrivedLen - prefixLen
	case kindAbort:
		want = abortLen - prefixLen
	case kindRevoke:
		want = revokeLen - prefixLen
	default:
		return nil, driver.ProtocolError("unknown entry kind %d", kind)
	}
	if want >= 0 && len(b) != want {
		return nil, driver.ProtocolError("entry kind %d of %d bytes, want %d", kind, len(b), want)
	}
	*e = entry{kind: kind, flags: body[1]}
	switch kind {
	case kindEager:
		e.ctx, e.tag, e.seq = le.Uint64(b), int32(le.Uint32(b[8:])), le.Uint32(b[12:])
		e.payload = b[16:]
	case kindRTS, kindRTSPull:
		e.ctx, e.tag, e.seq = le.Uint64(b), int32(le.Uint32(b[8:])), le.Uint32(b[12:])
		e.size, e.id = le.Uint64(b[16:]), le.Uint64(b[24:])
		if e.size > maxMessage {
			return nil, driver.ProtocolError("rendezvous of %d bytes", e.size)
		}
		if kind == kindRTSPull {
			e.addr = le.Uint64(b[32:])
		}
	case kindPost:
		e.ctx, e.tag, e.seq = le.Uint64(b), int32(le.Uint32(b[8:])), le.Uint32(b[12:])
		e.size, e.region = le.Uint64(b[16:]), le.Uint64(b[24:])
		if e.size > maxMessage {
			return nil, driver.ProtocolError("post of %d bytes", e.size)
		}
	case kindRefuse, kindArrived:
		e.region, e.size = le.Uint64(b), le.Uint64(b[8:])
	case kindCTS:
		e.id, e.region, e.size = le.Uint64(b), le.Uint64(b[8:]), le.Uint64(b[16:])
	case kindCredit, kindAbort:
		e.size = le.Uint64(b)
	case kindRevoke:
		e.ctx = le.Uint64(b)
	case kindCancel, kindFin, kindWithdrawn:
		e.id = le.Uint64(b)
	case kindWithdraw:
		if le.Uint32(b[12:]) != 0 {
			return nil, driver.ProtocolError("withdraw entry with reserved bits %#x", le.Uint32(b[12:]))
		}
		e.ctx, e.seq, e.id = le.Uint64(b), le.Uint32(b[8:]), le.Uint64(b[16:])
	}
	return rest, nil
}
