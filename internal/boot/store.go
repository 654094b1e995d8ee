package boot

import "fmt"

// EventKind says what an Event reports.
type EventKind int

const (
	// EventAbort: a rank asked the launcher to end the job (ABORT).
	EventAbort EventKind = iota + 1
	// EventLost: a rank's connection ended without BYE after its HELLO.
	EventLost
)

// String returns "abort" or "lost".
func (k EventKind) String() string {
	switch k {
	case EventAbort:
		return "abort"
	case EventLost:
		return "lost"
	}
	return fmt.Sprintf("EventKind(%d)", int(k))
}

// Event is what the KVS tells the launcher about a rank. Each rank yields at
// most one of each kind.
type Event struct {
	Kind    EventKind
	Rank    int
	Code    int    // EventAbort: the exit code the rank asked for
	Message string // EventAbort: the rank's message (at most 1 KiB)
}

// rankPhase is where a rank stands in the job's life.
type rankPhase uint8

const (
	phaseAbsent rankPhase = iota // not connected yet
	phaseJoined                  // HELLO accepted
	phaseLeft                    // said BYE
	phaseLost                    // connection ended without BYE
)

// waiter is a GET waiting for its key: the rank and its request id.
type waiter struct {
	rank int
	id   uint32
}

// delivery is a reply for a request of some joined rank.
type delivery struct {
	rank int
	msg  message
}

// limits bound what ranks can make the KVS hold.
type limits struct {
	store   int64 // bytes of keys and values, plus entryCost per key
	waiting int   // GETs waiting at once, per rank
}

// entryCost charges each key for the map's own overhead, so many tiny keys
// cannot exceed the store limit unseen.
const entryCost = 64

// defaultLimits: 64 MiB holds an address per rank for a million ranks many
// times over; 1024 waiting GETs per rank is far more than address exchange
// needs and still bounds a looping rank.
var defaultLimits = limits{store: 64 << 20, waiting: 1024}

// store is the KVS's state machine: it applies one request at a time and
// returns the replies to send, doing no I/O itself (the server does), so
// every rule is testable without sockets.
type store struct {
	size     int
	lim      limits
	used     int64
	kv       map[string]string
	waiting  map[string][]waiter // key → GETs waiting for it, in arrival order
	waitKey  map[waiter]string   // GET → the key it waits for (CANCEL, leave)
	nwaiting []int               // per rank
	phase    []rankPhase
	aborted  []bool
	watchID  []uint32 // each rank's WATCH request id, 0 if it has none
	reported []bool   // the launcher reported the rank lost (ReportLost)

	// The fence being collected. Epochs count from 1; a FENCE names the
	// epoch it enters so that a rank that lost count is told, not matched
	// with the wrong barrier.
	epoch   uint64
	fenceID []uint32 // each entered rank's request id
	inFence []bool
	nIn     int
	gone    int // the first rank that left the job, -1 while none has
}

func newStore(size int, lim limits) *store {
	return &store{
		size:     size,
		lim:      lim,
		kv:       make(map[string]string),
		waiting:  make(map[string][]waiter),
		waitKey:  make(map[waiter]string),
		nwaiting: make([]int, size),
		phase:    make([]rankPhase, size),
		aborted:  make([]bool, size),
		watchID:  make([]uint32, size),
		reported: make([]bool, size),
		epoch:    1,
		fenceID:  make([]uint32, size),
		inFence:  make([]bool, size),
		gone:     -1,
	}
}

// outcome is the effect of one request or of a lost connection.
type outcome struct {
	reply  *message   // the requester's answer, nil if it has none yet
	out    []delivery // answers to requests of joined ranks (GETs, FENCEs)
	event  *Event     // for the launcher
	joined bool       // HELLO accepted: the connection now speaks for the rank
	bye    bool       // BYE accepted: close after the reply
}

func errReply(id uint32, code uint16, format string, args ...any) *message {
	return &message{op: opErr, id: id, code: int32(code), text: cutText(fmt.Sprintf(format, args...))}
}

func okReply(id uint32) *message { return &message{op: opOK, id: id} }

// cutText bounds a message to maxText bytes.
func cutText(s string) string {
	if len(s) > maxText {
		return s[:maxText]
	}
	return s
}

// handle applies request m from a connection authenticated as rank; joined
// says whether that connection's HELLO was accepted.
func (s *store) handle(rank int, joined bool, m *message) outcome {
	if m.op == opHello {
		return s.hello(rank, joined, m)
	}
	if !joined {
		return outcome{reply: errReply(m.id, codeRefused, "%v before HELLO", m.op)}
	}
	switch m.op {
	case opPut:
		return s.put(m)
	case opGet:
		return s.get(rank, m)
	case opCancel:
		s.cancel(waiter{rank, m.id})
		return outcome{}
	case opFence:
		return s.enterFence(rank, m)
	case opBye:
		s.phase[rank] = phaseLeft
		o := s.leave(rank)
		o.reply, o.bye = okReply(m.id), true
		return o
	case opWatch:
		return s.watch(rank, m)
	case opAbort:
		o := outcome{reply: okReply(m.id)}
		if !s.aborted[rank] {
			s.aborted[rank] = true
			o.event = &Event{Kind: EventAbort, Rank: rank, Code: int(m.code), Message: cutText(m.text)}
		}
		return o
	}
	return outcome{reply: errReply(m.id, codeMalformed, "%v is not a request", m.op)}
}

func (s *store) hello(rank int, joined bool, m *message) outcome {
	switch {
	case joined:
		return outcome{reply: errReply(m.id, codeRefused, "second HELLO on one connection")}
	case m.rank != uint32(rank):
		return outcome{reply: errReply(m.id, codeRefused, "HELLO names rank %d but the connection authenticated as rank %d", m.rank, rank)}
	case rank < 0 || rank >= s.size:
		return outcome{reply: errReply(m.id, codeRefused, "rank %d is out of range for a job of %d ranks", rank, s.size)}
	case m.size != uint32(s.size):
		return outcome{reply: errReply(m.id, codeRefused, "rank %d believes the job has %d ranks, the launcher started %d", rank, m.size, s.size)}
	case s.phase[rank] == phaseJoined:
		return outcome{reply: errReply(m.id, codeRefused, "rank %d is already connected", rank)}
	case s.phase[rank] != phaseAbsent:
		return outcome{reply: errReply(m.id, codeRefused, "rank %d has already left the job", rank)}
	}
	s.phase[rank] = phaseJoined
	return outcome{reply: okReply(m.id), joined: true}
}

func (s *store) put(m *message) outcome {
	switch {
	case m.key == "":
		return outcome{reply: errReply(m.id, codeRefused, "empty key")}
	case len(m.key) > MaxKey:
		return outcome{reply: errReply(m.id, codeLimit, "key of %d bytes, limit %d", len(m.key), MaxKey)}
	case len(m.value) > MaxValue:
		return outcome{reply: errReply(m.id, codeLimit, "value of %d bytes for key %q, limit %d", len(m.value), m.key, MaxValue)}
	}
	if old, ok := s.kv[m.key]; ok {
		if old != m.value {
			return outcome{reply: errReply(m.id, codeConflict, "key %q already holds a different value", m.key)}
		}
		return outcome{reply: okReply(m.id)}
	}
	cost := int64(len(m.key) + len(m.value) + entryCost)
	if s.used+cost > s.lim.store {
		return outcome{reply: errReply(m.id, codeLimit, "store full (%d of %d bytes used)", s.used, s.lim.store)}
	}
	s.used += cost
	s.kv[m.key] = m.value
	o := outcome{reply: okReply(m.id)}
	for _, w := range s.waiting[m.key] {
		o.out = append(o.out, delivery{w.rank, message{op: opValue, id: w.id, value: m.value}})
		delete(s.waitKey, w)
		s.nwaiting[w.rank]--
	}
	delete(s.waiting, m.key)
	return o
}

func (s *store) get(rank int, m *message) outcome {
	switch {
	case m.key == "":
		return outcome{reply: errReply(m.id, codeRefused, "empty key")}
	case len(m.key) > MaxKey:
		return outcome{reply: errReply(m.id, codeLimit, "key of %d bytes, limit %d", len(m.key), MaxKey)}
	}
	if v, ok := s.kv[m.key]; ok {
		return outcome{reply: &message{op: opValue, id: m.id, value: v}}
	}
	w := waiter{rank, m.id}
	if _, dup := s.waitKey[w]; dup {
		return outcome{reply: errReply(m.id, codeRefused, "request id %d is already waiting", m.id)}
	}
	if s.nwaiting[rank] >= s.lim.waiting {
		return outcome{reply: errReply(m.id, codeLimit, "rank %d already has %d GETs waiting", rank, s.nwaiting[rank])}
	}
	s.waiting[m.key] = append(s.waiting[m.key], w)
	s.waitKey[w] = m.key
	s.nwaiting[rank]++
	return outcome{}
}

// cancel forgets a waiting GET; a GET already answered (or unknown) is
// ignored, since its reply may be on the wire already.
func (s *store) cancel(w waiter) {
	key, ok := s.waitKey[w]
	if !ok {
		return
	}
	delete(s.waitKey, w)
	s.nwaiting[w.rank]--
	ws := s.waiting[key]
	for i := range ws {
		if ws[i] == w {
			ws = append(ws[:i], ws[i+1:]...)
			break
		}
	}
	if len(ws) == 0 {
		delete(s.waiting, key)
	} else {
		s.waiting[key] = ws
	}
}

func (s *store) enterFence(rank int, m *message) outcome {
	switch {
	case s.gone >= 0:
		return outcome{reply: errReply(m.id, codeRankGone, "fence epoch %d cannot complete: rank %d has left the job", m.epoch, s.gone)}
	case m.epoch != s.epoch:
		return outcome{reply: errReply(m.id, codeRefused, "FENCE for epoch %d, the job is at epoch %d", m.epoch, s.epoch)}
	case s.inFence[rank]:
		return outcome{reply: errReply(m.id, codeRefused, "rank %d is already in fence epoch %d", rank, s.epoch)}
	}
	s.inFence[rank], s.fenceID[rank] = true, m.id
	s.nIn++
	if s.nIn < s.size {
		return outcome{}
	}
	var o outcome
	for r := range s.size {
		o.out = append(o.out, delivery{r, message{op: opFenced, id: s.fenceID[r], epoch: s.epoch}})
	}
	s.resetFence()
	s.epoch++
	return o
}

func (s *store) resetFence() {
	clear(s.inFence)
	s.nIn = 0
}

// lost records that a joined rank's connection ended without BYE.
func (s *store) lost(rank int) outcome {
	s.phase[rank] = phaseLost
	o := s.leave(rank)
	o.event = &Event{Kind: EventLost, Rank: rank}
	return o
}

// leave drops what a departing rank was waiting for, and fails the fence
// being collected: it can no longer complete, and failing it now lets the
// other ranks report a lost peer instead of hanging until they are killed.
func (s *store) leave(rank int) outcome {
	for w := range s.waitKey {
		if w.rank == rank {
			s.cancel(w)
		}
	}
	if s.gone < 0 {
		s.gone = rank
	}
	var o outcome
	if s.nIn > 0 {
		for r := range s.size {
			if s.inFence[r] && r != rank {
				o.out = append(o.out, delivery{r, *errReply(s.fenceID[r], codeRankGone, "fence epoch %d cannot complete: rank %d has left the job", s.epoch, rank)})
			}
		}
		s.resetFence()
	}
	return o
}

// watch subscribes rank to the losses the launcher reports: OK, then a
// LOST for each rank reported so far, and later ones as they come
// (reportLost). Once per connection: the id is the subscription's.
func (s *store) watch(rank int, m *message) outcome {
	switch {
	case m.id == 0:
		return outcome{reply: errReply(m.id, codeRefused, "WATCH with id 0")}
	case s.watchID[rank] != 0:
		return outcome{reply: errReply(m.id, codeRefused, "rank %d is already watching", rank)}
	}
	s.watchID[rank] = m.id
	o := outcome{reply: okReply(m.id)}
	for r, lost := range s.reported {
		if lost && r != rank {
			o.out = append(o.out, delivery{rank, message{op: opLost, id: m.id, rank: uint32(r)}})
		}
	}
	return o
}

// reportLost: the launcher says rank is lost (commtune run --keep-going).
// Every other rank that watches and is still joined gets one LOST; a rank
// reported twice is told once.
func (s *store) reportLost(rank int) outcome {
	if rank < 0 || rank >= s.size || s.reported[rank] {
		return outcome{}
	}
	s.reported[rank] = true
	var o outcome
	if s.phase[rank] == phaseAbsent {
		// It ended before it joined: the others' fences cannot complete
		// without it, and fail now instead of waiting for good.
		s.phase[rank] = phaseLost
		o = s.leave(rank)
	}
	for r, id := range s.watchID {
		if id != 0 && r != rank && s.phase[r] == phaseJoined {
			o.out = append(o.out, delivery{r, message{op: opLost, id: id, rank: uint32(rank)}})
		}
	}
	return o
}

// left reports whether rank said BYE.
func (s *store) left(rank int) bool {
	return rank >= 0 && rank < s.size && s.phase[rank] == phaseLeft
}
