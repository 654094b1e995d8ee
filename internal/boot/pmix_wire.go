package boot

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"
)

// PMIx's wire, as OpenPMIx speaks it between a client and its local
// server (read in v3.2.5 and v4.2.2, run against 4.2.2); docs/pmix.md describes it byte by byte. Every message is a
// 16-byte header then a payload of "packs": each pack is a count then that
// many items of one type. Items are encoded in one of two ways, which the
// client announces in its connection request (the "bfrops" module):
//
//   - v41/v4: integers as base-128 varints (signed ones zigzag-encoded),
//     size_t untagged;
//   - v3: integers fixed-width big-endian, and the sized types (size_t,
//     int, uint) preceded by a 2-byte tag naming their real width.
//
// Strings are an int32 length counting a trailing NUL, then the bytes and
// the NUL; a value is its 2-byte data type then its data.

// ErrPMIx reports a PMIx server that breaks the protocol, refuses a request
// or is gone.
var ErrPMIx = errors.New("pmix")

// pmixEncoding is how a connection packs integers.
type pmixEncoding uint8

const (
	pmixV3 pmixEncoding = iota + 1 // fixed width, big-endian, sized types tagged
	pmixV4                         // varints (flex128), zigzag for signed
)

// PMIx data types (pmix_common.h; unchanged from v3 to v6) the client packs
// or unpacks.
const (
	pmixUndef            = 0
	pmixBool             = 1
	pmixByte             = 2
	pmixString           = 3
	pmixSize             = 4
	pmixPID              = 5
	pmixInt              = 6
	pmixInt8             = 7
	pmixInt16            = 8
	pmixInt32            = 9
	pmixInt64            = 10
	pmixUint             = 11
	pmixUint8            = 12
	pmixUint16           = 13
	pmixUint32           = 14
	pmixUint64           = 15
	pmixFloat            = 16
	pmixDouble           = 17
	pmixTimeval          = 18
	pmixTime             = 19
	pmixStatus           = 20
	pmixProc             = 22
	pmixInfo             = 24
	pmixByteObject       = 27
	pmixPersist          = 30
	pmixScope            = 32
	pmixDataRange        = 33
	pmixCommand          = 34
	pmixDirectives       = 35
	pmixDataType         = 36
	pmixProcState        = 37
	pmixDataArray        = 39
	pmixProcRank         = 40
	pmixCompressedString = 42
	pmixAllocDir         = 43
	pmixJobState         = 50
	pmixLinkState        = 51
	pmixCPUSet           = 52
	pmixCompressedBytes  = 59
	pmixProcNspace       = 60
)

// Ranks with a meaning of their own.
const (
	pmixRankWildcard = math.MaxUint32 - 1 // the job as a whole
	pmixRankUndef    = math.MaxUint32
)

// pmixMaxMessage bounds one message's payload: a server cannot make a
// client allocate more (a whole job's data for a few thousand ranks fits).
const pmixMaxMessage = 64 << 20

// pmixHeaderLen is the header's size: peer index, tag, payload length,
// padding, 4 bytes each.
const pmixHeaderLen = 16

// pmixHeader heads every message.
type pmixHeader struct {
	pindex int32  // the client's index at the server (from the handshake)
	tag    uint32 // matches a reply to its request; 0 is an event
	nbytes uint32 // payload length
}

// appendHeader appends h in network byte order.
func appendHeader(b []byte, h pmixHeader) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(h.pindex))
	b = binary.BigEndian.AppendUint32(b, h.tag)
	b = binary.BigEndian.AppendUint32(b, h.nbytes)
	return binary.BigEndian.AppendUint32(b, 0)
}

// parseHeader reads a header and checks the payload length.
func parseHeader(b []byte) (pmixHeader, error) {
	if len(b) < pmixHeaderLen {
		return pmixHeader{}, fmt.Errorf("%w: a header of %d bytes, want %d", ErrPMIx, len(b), pmixHeaderLen)
	}
	h := pmixHeader{
		pindex: int32(binary.BigEndian.Uint32(b)),
		tag:    binary.BigEndian.Uint32(b[4:]),
		nbytes: binary.BigEndian.Uint32(b[8:]),
	}
	if h.nbytes > pmixMaxMessage {
		return h, fmt.Errorf("%w: a message of %d bytes (at most %d)", ErrPMIx, h.nbytes, pmixMaxMessage)
	}
	return h, nil
}

// pmixHello is what the connection request carries besides the header.
type pmixHello struct {
	nspace  string
	rank    uint32
	version string // the PMIx version the client speaks as
	bfrops  string // "v41", "v4" or "v3": the encoding
	uid     uint32
	gid     uint32
}

// appendHello builds the connection request of a simple client in the
// "native" security mode: module name, credential (effective uid and gid
// in host order), a process-type flag 0, nspace, rank, version, bfrops
// module, buffer type 1 (not self-describing), gds module "hash" (job
// data comes by message, not a shared-memory store). OpenPMIx counts the
// process-type byte twice in the length and sends the spare byte as a
// trailing 0, and it copies the length into the header in host order; so
// does this, byte for byte.
func appendHello(b []byte, h pmixHello) []byte {
	start := len(b)
	b = appendHeader(b, pmixHeader{pindex: -1, tag: math.MaxUint32})
	b = append(b, "native\x00"...)
	b = binary.BigEndian.AppendUint32(b, 8)
	b = binary.NativeEndian.AppendUint32(b, h.uid)
	b = binary.NativeEndian.AppendUint32(b, h.gid)
	b = append(b, 0) // PMIX_SIMPLE_CLIENT
	b = append(b, h.nspace...)
	b = append(b, 0)
	b = binary.BigEndian.AppendUint32(b, h.rank)
	b = append(b, h.version...)
	b = append(b, 0)
	b = append(b, h.bfrops...)
	b = append(b, 0, 1) // PMIX_BFROP_BUFFER_NON_DESC
	b = append(b, "hash\x00"...)
	b = append(b, 0)
	binary.NativeEndian.PutUint32(b[start+8:], uint32(len(b)-start-pmixHeaderLen))
	return b
}

// parseHelloReply reads the server's answer to the connection request: a
// status then this client's peer index, both 4 bytes in network order.
func parseHelloReply(b []byte) (pindex int32, err error) {
	if len(b) != 8 {
		return 0, fmt.Errorf("%w: the connection reply has %d bytes, want 8", ErrPMIx, len(b))
	}
	if st := int32(binary.BigEndian.Uint32(b)); st != 0 {
		return 0, fmt.Errorf("%w: the server refused the connection: %s", ErrPMIx, pmixStatusText(st))
	}
	return int32(binary.BigEndian.Uint32(b[4:])), nil
}

// pmixStatusNames names the statuses a client meets (pmix_common.h).
var pmixStatusNames = map[int32]string{
	-1:   "error",
	-7:   "process aborted",
	-11:  "exists",
	-12:  "invalid credential",
	-13:  "handshake failed",
	-16:  "unknown data type",
	-20:  "unpack failure",
	-23:  "no permissions",
	-24:  "timeout",
	-25:  "unreachable",
	-27:  "bad parameter",
	-31:  "not initialized",
	-46:  "not found",
	-47:  "not supported",
	-49:  "communication failure",
	-52:  "partial success: a participant was lost",
	-61:  "lost connection",
	-101: "lost connection to server",
}

// pmixStatusText is a status with its name, when it has one.
func pmixStatusText(st int32) string {
	if n, ok := pmixStatusNames[st]; ok {
		return fmt.Sprintf("status %d (%s)", st, n)
	}
	return fmt.Sprintf("status %d", st)
}

// pmixWriter packs a payload.
type pmixWriter struct {
	b   []byte
	enc pmixEncoding
}

func (w *pmixWriter) uvarint(v uint64) { w.b = appendFlex(w.b, v) }

// u16, u32, i32 and size pack one item of that width.
func (w *pmixWriter) u16(v uint16) {
	if w.enc == pmixV3 {
		w.b = binary.BigEndian.AppendUint16(w.b, v)
		return
	}
	w.uvarint(uint64(v))
}

func (w *pmixWriter) u32(v uint32) {
	if w.enc == pmixV3 {
		w.b = binary.BigEndian.AppendUint32(w.b, v)
		return
	}
	w.uvarint(uint64(v))
}

func (w *pmixWriter) i32(v int32) {
	if w.enc == pmixV3 {
		w.b = binary.BigEndian.AppendUint32(w.b, uint32(v))
		return
	}
	w.uvarint(zigzag(int64(v)))
}

func (w *pmixWriter) size(v uint64) {
	if w.enc == pmixV3 {
		w.u16(pmixUint64)
		w.b = binary.BigEndian.AppendUint64(w.b, v)
		return
	}
	w.uvarint(v)
}

// count starts a pack of n items.
func (w *pmixWriter) count(n int) { w.i32(int32(n)) }

// str packs a string with its NUL; "" is packed as a NULL string.
func (w *pmixWriter) str(s string) {
	if s == "" {
		w.i32(0)
		return
	}
	w.i32(int32(len(s) + 1))
	w.b = append(w.b, s...)
	w.b = append(w.b, 0)
}

// bytes packs a byte object (or a buffer's body): its size then itself.
func (w *pmixWriter) bytes(b []byte) {
	w.size(uint64(len(b)))
	w.b = append(w.b, b...)
}

// proc packs a pmix_proc_t: namespace then rank.
func (w *pmixWriter) proc(nspace string, rank uint32) {
	w.str(nspace)
	w.u32(rank)
}

// kval packs a key and a string value; a value holding NUL goes as a byte
// object, which carries any bytes.
func (w *pmixWriter) kval(key, value string) {
	w.str(key)
	if strings.IndexByte(value, 0) >= 0 {
		w.u16(pmixByteObject)
		w.bytes([]byte(value))
		return
	}
	w.u16(pmixString)
	w.str(value)
}

// infoBool packs a pmix_info_t holding a bool, no directives.
func (w *pmixWriter) infoBool(key string, v bool) {
	w.str(key)
	w.u32(0)
	w.u16(pmixBool)
	if v {
		w.b = append(w.b, 1)
	} else {
		w.b = append(w.b, 0)
	}
}

// pmixReader unpacks a payload. The first error sticks: later reads
// return zero values, and err says what broke where.
type pmixReader struct {
	b      []byte
	off    int
	enc    pmixEncoding
	err    error
	values int // values decoded, bounded by pmixMaxValues
}

// pmixMaxValues bounds the values one reader decodes: a message of
// one-byte items must not become a gigabyte of Go values.
const pmixMaxValues = 1 << 20

func (r *pmixReader) fail(format string, a ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: at byte %d of %d: %s", ErrPMIx, r.off, len(r.b), fmt.Sprintf(format, a...))
	}
}

func (r *pmixReader) left() int { return len(r.b) - r.off }

func (r *pmixReader) take(n int, what string) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > r.left() {
		r.fail("%s of %d bytes runs past the end", what, n)
		return nil
	}
	p := r.b[r.off : r.off+n]
	r.off += n
	return p
}

func (r *pmixReader) byte1(what string) byte {
	p := r.take(1, what)
	if p == nil {
		return 0
	}
	return p[0]
}

func (r *pmixReader) uvarint(what string) uint64 {
	if r.err != nil {
		return 0
	}
	v, n := flexUvarint(r.b[r.off:])
	if n <= 0 {
		r.fail("%s is not a varint", what)
		return 0
	}
	r.off += n
	return v
}

func (r *pmixReader) varint(what string) int64 { return unzigzag(r.uvarint(what)) }

// OpenPMIx's varints ("flex128") are base-128 groups, low first, the top
// bit saying another follows, as LEB128; but after 8 groups the 9th byte
// holds the last 8 bits whole, so a uint64 takes at most 9 bytes.
const flexMaxLen = 9

// appendFlex appends v as a flex128 varint.
func appendFlex(b []byte, v uint64) []byte {
	for i := 0; i < flexMaxLen-1; i++ {
		if v < 0x80 {
			return append(b, byte(v))
		}
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

// flexUvarint reads a flex128 varint: the value and the bytes it took,
// or n 0 when b ends inside it.
func flexUvarint(b []byte) (v uint64, n int) {
	for i := 0; i < flexMaxLen && i < len(b); i++ {
		if i == flexMaxLen-1 {
			return v | uint64(b[i])<<56, flexMaxLen
		}
		v |= uint64(b[i]&0x7f) << (7 * i)
		if b[i] < 0x80 {
			return v, i + 1
		}
	}
	return 0, 0
}

// zigzag and unzigzag map signed integers to unsigned ones, small
// magnitudes to small numbers, as OpenPMIx does before a varint.
func zigzag(v int64) uint64   { return uint64(v<<1) ^ uint64(v>>63) }
func unzigzag(u uint64) int64 { return int64(u>>1) ^ -int64(u&1) }

// unsigned reads an unsigned integer of width bytes: fixed big-endian in
// v3, a varint no wider than width in v4.
func (r *pmixReader) unsigned(what string, width int) uint64 {
	if r.enc == pmixV3 {
		p := r.take(width, what)
		switch {
		case p == nil:
			return 0
		case width == 2:
			return uint64(binary.BigEndian.Uint16(p))
		case width == 4:
			return uint64(binary.BigEndian.Uint32(p))
		}
		return binary.BigEndian.Uint64(p)
	}
	v := r.uvarint(what)
	if width < 8 && v>>(8*width) != 0 {
		r.fail("%s %d does not fit %d bits", what, v, 8*width)
		return 0
	}
	return v
}

func (r *pmixReader) u16(what string) uint16 { return uint16(r.unsigned(what, 2)) }

func (r *pmixReader) u32(what string) uint32 { return uint32(r.unsigned(what, 4)) }

func (r *pmixReader) i32(what string) int32 {
	if r.enc == pmixV3 {
		return int32(r.u32(what))
	}
	v := r.varint(what)
	if v > math.MaxInt32 || v < math.MinInt32 {
		r.fail("%s %d does not fit 32 bits", what, v)
	}
	return int32(v)
}

func (r *pmixReader) u64(what string) uint64 { return r.unsigned(what, 8) }

func (r *pmixReader) i64(what string) int64 {
	if r.enc == pmixV3 {
		return int64(r.u64(what))
	}
	return r.varint(what)
}

// tagged reads an integer preceded by the type it was packed as: v3's
// size_t, int and uint, and pid in both encodings.
func (r *pmixReader) tagged(what string) int64 {
	switch t := r.u16(what + "'s type"); t {
	case pmixInt8, pmixUint8:
		return int64(r.byte1(what))
	case pmixInt16:
		if r.enc == pmixV3 {
			return int64(int16(r.u16(what)))
		}
		return r.varint(what)
	case pmixUint16:
		return int64(r.u16(what))
	case pmixInt32:
		return int64(r.i32(what))
	case pmixUint32:
		return int64(r.u32(what))
	case pmixInt64:
		return r.i64(what)
	case pmixUint64:
		v := r.u64(what)
		if v > math.MaxInt64 {
			r.fail("%s %d is too large", what, v)
		}
		return int64(v)
	default:
		r.fail("%s tagged with type %d, not an integer", what, t)
		return 0
	}
}

// size reads a size_t: tagged in v3, an unsigned varint in v4.
func (r *pmixReader) size(what string) int {
	var v int64
	if r.enc == pmixV3 {
		v = r.tagged(what)
	} else if u := r.uvarint(what); u <= math.MaxInt64 {
		v = int64(u)
	} else {
		v = -1
	}
	if v < 0 || v > pmixMaxMessage {
		r.fail("%s %d is out of range", what, v)
		return 0
	}
	return int(v)
}

// count reads the number of items of a pack, bounded by the bytes left
// (every item takes at least one).
func (r *pmixReader) count(what string) int {
	n := r.i32(what + " count")
	if r.err == nil && (n < 0 || int(n) > r.left()) {
		r.fail("%s count %d with %d bytes left", what, n, r.left())
		return 0
	}
	return int(n)
}

// one reads the count of a pack that must hold exactly one item.
func (r *pmixReader) one(what string) {
	if n := r.count(what); r.err == nil && n != 1 {
		r.fail("%d items of %s, want 1", n, what)
	}
}

func (r *pmixReader) str(what string) string {
	n := r.i32(what + "'s length")
	if r.err != nil || n == 0 {
		return ""
	}
	p := r.take(int(n), what)
	if p == nil {
		return ""
	}
	if p[len(p)-1] != 0 {
		r.fail("%s is not NUL-terminated", what)
		return ""
	}
	return string(p[:len(p)-1])
}

func (r *pmixReader) bytes(what string) []byte {
	n := r.size(what + "'s size")
	return r.take(n, what)
}

// pmixInfoItem is a key and its value (a pmix_info_t or a pmix_kval_t).
type pmixInfoItem struct {
	key   string
	value any
}

// value reads a pmix_value_t: its type then its data. Values are decoded
// to string (floats too, as PMIx sends them), []byte, bool, int64,
// uint64, [2]int64 (a timeval), pmixInfoItem (an info), []pmixInfoItem
// (an info array), []any (another array), pmixProcID, or nil (undefined).
// A type the client does not know is an error, since values carry no
// length to skip them by.
func (r *pmixReader) value(what string, depth int) any {
	t := r.u16(what + "'s type")
	return r.typed(t, what, depth)
}

func (r *pmixReader) typed(t uint16, what string, depth int) any {
	if r.err != nil {
		return nil
	}
	if r.values++; r.values > pmixMaxValues {
		r.fail("more than %d values", pmixMaxValues)
		return nil
	}
	switch t {
	case pmixUndef:
		return nil
	case pmixBool:
		return r.byte1(what) != 0
	case pmixInt8:
		return int64(int8(r.byte1(what)))
	case pmixByte, pmixUint8, pmixPersist, pmixScope, pmixDataRange, pmixCommand, pmixProcState, pmixAllocDir, pmixJobState, pmixLinkState:
		return uint64(r.byte1(what))
	case pmixString, pmixProcNspace, pmixCPUSet, pmixFloat, pmixDouble: // floats travel as "%f" text
		return r.str(what)
	case pmixSize:
		if r.enc == pmixV3 {
			return uint64(r.tagged(what))
		}
		return r.uvarint(what)
	case pmixTime:
		return r.u64(what)
	case pmixTimeval:
		return [2]int64{r.i64(what + "'s seconds"), r.i64(what + "'s microseconds")}
	case pmixInt, pmixUint: // both int32 on the wire: v3 tags it, v4 zigzags it
		if r.enc == pmixV3 {
			return r.tagged(what)
		}
		return int64(r.i32(what))
	case pmixPID:
		return r.tagged(what)
	case pmixInt16:
		if r.enc == pmixV3 {
			return int64(int16(r.u16(what)))
		}
		return r.varint(what)
	case pmixInt32, pmixStatus:
		return int64(r.i32(what))
	case pmixInt64:
		return r.i64(what)
	case pmixUint16, pmixDataType:
		return uint64(r.u16(what))
	case pmixUint32, pmixProcRank, pmixDirectives:
		return uint64(r.u32(what))
	case pmixUint64:
		return r.u64(what)
	case pmixByteObject, pmixCompressedString, pmixCompressedBytes: // compressed ones stay compressed
		return r.bytes(what)
	case pmixProc:
		return pmixProcID{nspace: r.str(what + "'s namespace"), rank: r.u32(what + "'s rank")}
	case pmixInfo:
		if depth > 4 {
			r.fail("%s: values nested too deep", what)
			return nil
		}
		return r.info(what, depth+1)
	case pmixDataArray:
		if depth > 4 {
			r.fail("%s: arrays nested too deep", what)
			return nil
		}
		et := r.u16(what + "'s element type")
		n := r.size(what + "'s length")
		if r.err == nil && n > r.left() {
			r.fail("%s: %d elements with %d bytes left", what, n, r.left())
		}
		if et == pmixInfo {
			items := make([]pmixInfoItem, 0, min(n, 64))
			for i := 0; i < n && r.err == nil; i++ {
				items = append(items, r.info(what, depth+1))
			}
			return items
		}
		items := make([]any, 0, min(n, 64))
		for i := 0; i < n && r.err == nil; i++ {
			items = append(items, r.typed(et, what, depth+1))
		}
		return items
	}
	r.fail("%s has type %d, which this client does not decode", what, t)
	return nil
}

// info reads a pmix_info_t: key, directives, value.
func (r *pmixReader) info(what string, depth int) pmixInfoItem {
	key := r.str(what + "'s key")
	r.u32(key + "'s directives")
	return pmixInfoItem{key: key, value: r.value(key, depth)}
}

// kval reads a pmix_kval_t: key, value.
func (r *pmixReader) kval(what string) pmixInfoItem {
	key := r.str(what + "'s key")
	return pmixInfoItem{key: key, value: r.value(key, 0)}
}

// status reads a one-item pack of a status.
func (r *pmixReader) status(what string) int32 {
	r.one(what)
	return r.i32(what)
}

// pmixProcID is a pmix_proc_t.
type pmixProcID struct {
	nspace string
	rank   uint32
}
