package shm

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"unsafe"
)

// Segment layout (docs/wire-shm.md). Words written by different processes
// sit 128 bytes apart: adjacent cache lines are fetched in pairs, and a
// producer's tail must not share a fetch with the consumer's head.
const (
	segMagic   = 0x31_4D_48_53_54_4D_54_43 // "CTMTSHM1"
	segVersion = 7                         // 3: the consumer sleeps on a FIFO (bell_linux.go), rung; 4: fast boxes; 5: rings linked on first use; 6: memory budget; 7: inbound queue and fragment pool
	pageSize   = 4096
	wordGap    = 128

	offMagic     = 0
	offVersion   = 8
	offRings     = 12
	offCapacity  = 16
	offPid       = 24
	offRank      = 28
	offProbe     = 32          // owner's address of its CMA probe word
	offProbeVal  = 40          // the value there
	offBudget    = 48          // bytes of ring data the owner lets its senders give memory (ring.claim)
	offPoolSlots = 56          // u32: large fragments in the owner's pool (0: no queue, rings only)
	offSlotSize  = 60          // u32: bytes of each, header included
	offPoolSmall = 64          // u32: small fragments, before the large
	offSmallSize = 68          // u32: bytes of each, header included
	offRung      = 1 * wordGap // a producer rang the bell and the consumer has not woken since
	offSleepers  = 2 * wordGap
	offPolling   = 3 * wordGap
	offCanPull   = 4 * wordGap  // u8 per ring: the owner can read that sender's memory (CMA)
	offAttentive = 24 * wordGap // the owner's last wait ended with its message
	offUntimed   = 25 * wordGap // the consumer sleeps with no timeout
	offSenders   = 8 * wordGap  // u32 per ring: the world rank writing that ring
	offLinkState = 26 * wordGap // u8 per ring, written by its sender: linkReady, linkBye
	offLinks     = 30 * wordGap // bumped by a sender after it changes its link state
	offGranted   = 31 * wordGap // bytes of ring data senders have given memory, against the budget
	// 512: the can-pull bytes must stop short of the sender table, and
	// the link states short of the links word.
	maxRings = min(offSenders-offCanPull, (offAttentive-offSenders)/4, offLinks-offLinkState)

	// Link states of a ring (offLinkState): its sender has populated it
	// and may write records (the consumer starts polling it), and its
	// sender said goodbye without ever linking it (no Bye record follows).
	linkReady = 1
	linkBye   = 2

	// The queue page, after the header page: the owner's inbound queue
	// (fifo.go) at its start, then the count of fast boxes it has given
	// its senders (queue.go).
	queuePage     = pageSize
	offQueueBoxes = queuePage + 2*wordGap
	// headerPages is what a segment holds before its fragment pool.
	headerPages = 2 * pageSize

	// Ring block: a header page, then the data.
	ringTail    = 0
	ringHead    = 1 * wordGap
	ringWaiting = 2 * wordGap // the producer sleeps for space
	ringSpace   = 3 * wordGap // futex: bumped when space frees while the producer sleeps
	// The upper half of the header page is the pair's fast box (fbox.go);
	// its consumer publishes its head here.
	ringFboxHead = 4 * wordGap
	// Bytes of the data, from its start, the producer has given memory
	// (ring.prepare): the consumer maps no further.
	ringPopulated = 5 * wordGap
)

// DefaultDir is where segments are created: tmpfs on Linux.
const DefaultDir = "/dev/shm"

// segment is a mapped inbound segment: the header page, the queue page,
// the owner's fragment pool, then one ring block per local sender.
type segment struct {
	mem       []byte
	path      string
	nrings    int
	capacity  int
	poolSlots int // large fragments
	poolSmall int // small fragments
}

// poolBytes is the size of a pool of small and large fragments.
func poolBytes(small, large int) int { return small*smallFragSize + large*fragSlotSize }

func segmentSize(nrings, capacity, poolSmall, poolSlots int) int {
	return headerPages + poolBytes(poolSmall, poolSlots) + nrings*(pageSize+capacity)
}

// SegmentPath returns the path of world rank's inbound segment in job.
func SegmentPath(dir, job string, rank int) string {
	return filepath.Join(dir, fmt.Sprintf("commtune-%s-%d", job, rank))
}

// pipePath returns the path of the FIFO the vmsplice method uses from
// world rank from to world rank to in job; it shares the segments' prefix,
// so RemoveJobFiles finds it too.
func pipePath(dir, job string, from, to int) string {
	return filepath.Join(dir, fmt.Sprintf("commtune-%s-%d-%d.pipe", job, from, to))
}

// bellPath returns the path of the FIFO that wakes world rank rank's
// consumer in job (bell_linux.go), under the segments' prefix too.
func bellPath(dir, job string, rank int) string {
	return filepath.Join(dir, fmt.Sprintf("commtune-%s-%d.bell", job, rank))
}

// createSegment creates and maps a new segment (0600; it must not exist).
// budget bounds the ring data its senders give memory (ring.claim);
// poolSlots is the most large fragments the owner's pool may hold, and
// smallPerLarge times as many small ones (0: no inbound queue, every
// pair talks through its ring).
func createSegment(path string, rank int, senders []int, capacity, budget, poolSlots int) (*segment, error) {
	if len(senders) > maxRings {
		return nil, fmt.Errorf("shm: %d other ranks on this node, at most %d", len(senders), maxRings)
	}
	if capacity < pageSize || capacity&(capacity-1) != 0 {
		return nil, fmt.Errorf("shm: ring capacity %d is not a power of two ≥ %d", capacity, pageSize)
	}
	if poolSlots < 0 || poolSlots > maxPoolSlots {
		return nil, fmt.Errorf("shm: a pool of %d fragments, at most %d", poolSlots, maxPoolSlots)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("shm: creating %s: %w", path, err)
	}
	defer f.Close()
	poolSmall := smallPerLarge * poolSlots
	size := segmentSize(len(senders), capacity, poolSmall, poolSlots)
	if err := f.Truncate(int64(size)); err != nil {
		os.Remove(path)
		return nil, fmt.Errorf("shm: sizing %s to %d bytes: %w", path, size, err)
	}
	// Only the header and queue pages are allocated now: the pool grows
	// as its owner sends (outPool.take), and a ring gets its memory when
	// its sender first writes to it (rail.link), so a job whose ranks
	// talk to a few neighbours never pays for the other pairs.
	if err := allocate(f, headerPages); err != nil {
		os.Remove(path)
		return nil, fmt.Errorf("shm: allocating %s (is %s full?): %w", path, filepath.Dir(path), err)
	}
	mem, err := mapSegment(f, size)
	if err != nil {
		os.Remove(path)
		return nil, fmt.Errorf("shm: mapping %s: %w", path, err)
	}
	s := &segment{mem: mem, path: path, nrings: len(senders), capacity: capacity, poolSlots: poolSlots, poolSmall: poolSmall}
	le := binary.LittleEndian
	le.PutUint32(mem[offPoolSlots:], uint32(poolSlots))
	le.PutUint32(mem[offSlotSize:], fragSlotSize)
	le.PutUint32(mem[offPoolSmall:], uint32(poolSmall))
	le.PutUint32(mem[offSmallSize:], smallFragSize)
	le.PutUint64(mem[queuePage+fifoHead:], uint64(fifoEmpty))
	le.PutUint64(mem[queuePage+fifoTail:], uint64(fifoEmpty))
	le.PutUint32(mem[offVersion:], segVersion)
	le.PutUint32(mem[offRings:], uint32(len(senders)))
	le.PutUint64(mem[offCapacity:], uint64(capacity))
	le.PutUint64(mem[offBudget:], uint64(budget))
	le.PutUint32(mem[offPid:], uint32(os.Getpid()))
	le.PutUint32(mem[offRank:], uint32(rank))
	for i, r := range senders {
		le.PutUint32(mem[offSenders+4*i:], uint32(r))
	}
	s.word64(offMagic).Store(segMagic) // last: the header is complete
	return s, nil
}

// openSegment maps an existing segment and checks its header.
func openSegment(path string) (*segment, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("shm: opening %s: %w", path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.Size() < headerPages || st.Size() > 1<<40 {
		return nil, fmt.Errorf("shm: %s is %d bytes, not a segment", path, st.Size())
	}
	mem, err := mapSegment(f, int(st.Size()))
	if err != nil {
		return nil, fmt.Errorf("shm: mapping %s: %w", path, err)
	}
	s := &segment{mem: mem, path: path}
	if err := s.check(int(st.Size())); err != nil {
		unmapMem(mem)
		return nil, fmt.Errorf("shm: %s: %w", path, err)
	}
	return s, nil
}

var errBadSegment = errors.New("not a valid commtune segment")

func (s *segment) check(size int) error {
	le := binary.LittleEndian
	if s.word64(offMagic).Load() != segMagic || le.Uint32(s.mem[offVersion:]) != segVersion {
		return errBadSegment
	}
	n, c := le.Uint32(s.mem[offRings:]), le.Uint64(s.mem[offCapacity:])
	slots, slotSize := le.Uint32(s.mem[offPoolSlots:]), le.Uint32(s.mem[offSlotSize:])
	small, smallSize := le.Uint32(s.mem[offPoolSmall:]), le.Uint32(s.mem[offSmallSize:])
	if slots > maxPoolSlots || slotSize != fragSlotSize || small > smallPerLarge*maxPoolSlots || smallSize != smallFragSize {
		return fmt.Errorf("%w: a pool of %d fragments of %d bytes and %d of %d", errBadSegment, small, smallSize, slots, slotSize)
	}
	if n == 0 || n > maxRings || c < pageSize || c > 1<<34 || c&(c-1) != 0 || segmentSize(int(n), int(c), int(small), int(slots)) != size {
		return fmt.Errorf("%w: %d rings of %d bytes and %d+%d fragments in %d bytes", errBadSegment, n, c, small, slots, size)
	}
	s.nrings, s.capacity, s.poolSlots, s.poolSmall = int(n), int(c), int(slots), int(small)
	return nil
}

func (s *segment) word32(off int) *atomic.Uint32 {
	return (*atomic.Uint32)(unsafe.Pointer(&s.mem[off]))
}

func (s *segment) word64(off int) *atomic.Uint64 {
	return (*atomic.Uint64)(unsafe.Pointer(&s.mem[off]))
}

func (s *segment) pid() int   { return int(binary.LittleEndian.Uint32(s.mem[offPid:])) }
func (s *segment) owner() int { return int(binary.LittleEndian.Uint32(s.mem[offRank:])) }

// budget returns the bytes of ring data the owner lets its senders give
// memory, and the word that counts what they gave.
func (s *segment) budget() (uint64, *atomic.Uint64) {
	return binary.LittleEndian.Uint64(s.mem[offBudget:]), s.word64(offGranted)
}

// sender returns the world rank that writes ring i.
func (s *segment) sender(i int) int { return int(binary.LittleEndian.Uint32(s.mem[offSenders+4*i:])) }

// ringFor returns the index of the ring world rank writes, or -1.
func (s *segment) ringFor(rank int) int {
	for i := 0; i < s.nrings; i++ {
		if s.sender(i) == rank {
			return i
		}
	}
	return -1
}

// linkState returns ring i's link state (linkReady, linkBye).
func (s *segment) linkState(i int) uint8 {
	return uint8(s.word32(offLinkState+i&^3).Load() >> (8 * (i & 3)))
}

// setLinkState adds bits to ring i's link state, then bumps the links
// word for the owner to look again. Senders share the state's words, so
// each sets its byte with a compare-and-swap.
func (s *segment) setLinkState(i int, bits uint8) {
	w, shift := s.word32(offLinkState+i&^3), 8*(i&3)
	for {
		old := w.Load()
		if w.CompareAndSwap(old, old|uint32(bits)<<shift) {
			break
		}
	}
	s.word32(offLinks).Add(1)
}

// ringBlock returns ring i's header page and data.
func (s *segment) ringBlock(i int) (hdr, data []byte) {
	off := headerPages + poolBytes(s.poolSmall, s.poolSlots) + i*(pageSize+s.capacity)
	return s.mem[off : off+pageSize], s.mem[off+pageSize : off+pageSize+s.capacity]
}

// queueWords returns the owner's inbound queue words (fifo.go).
func (s *segment) queueWords() []byte { return s.mem[queuePage : queuePage+FifoHeaderSize] }

// pool returns the owner's fragment pool.
func (s *segment) pool() fragPool {
	return newFragPool(s.mem[headerPages:headerPages+poolBytes(s.poolSmall, s.poolSlots)], s.poolSmall, smallFragSize, fragSlotSize)
}

func (s *segment) unmap() error {
	if s.mem == nil {
		return nil
	}
	err := unmapMem(s.mem)
	s.mem = nil
	return err
}

// RemoveJobFiles removes every segment and pipe of job left in dir: ranks
// unlink their files as soon as all peers have them open, but a rank that
// dies during start-up leaves them; the launcher calls this when the job
// has ended.
func RemoveJobFiles(dir, job string) error {
	names, err := filepath.Glob(filepath.Join(dir, "commtune-"+job+"-*"))
	if err != nil {
		return err
	}
	var errs []error
	for _, n := range names {
		if err := os.Remove(n); err != nil && !os.IsNotExist(err) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
