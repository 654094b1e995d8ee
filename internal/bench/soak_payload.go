package bench

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// PayloadID names one payload of a soak: the run's seed, the step, the
// rank whose data it is and which of that rank's payloads in the step
// (Part). Every byte of it follows from these and its offset, so a
// receiver checks what it got without being sent anything else, and a
// byte from another rank, step or part, or from another offset of the
// right one, is found.
type PayloadID struct {
	Seed uint64
	Step int64
	Rank int
	Part int
}

// mix64 is SplitMix64's finalizer: every input bit moves every output
// bit, so neighbouring keys give unrelated words.
func mix64(z uint64) uint64 {
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// key folds the identity into one word, field by field, so that (step 1,
// rank 2) and (step 2, rank 1) differ.
func (id PayloadID) key() uint64 {
	k := mix64(id.Seed + 0x9e3779b97f4a7c15)
	k = mix64(k ^ uint64(id.Step))
	k = mix64(k ^ uint64(int64(id.Rank)))
	return mix64(k ^ uint64(int64(id.Part)))
}

// word returns the eight bytes of the payload from offset 8·j.
func (id PayloadID) word(key uint64, j int) uint64 {
	return mix64(key + uint64(j)*0x9e3779b97f4a7c15)
}

// SoakFill fills buf with bytes from offset 0 of payload id.
func SoakFill(buf []byte, id PayloadID) { soakFillFrom(buf, id, 0) }

// soakFillFrom fills buf with the bytes of payload id from offset from:
// buf[i] is the payload's byte from+i, so a part of a larger buffer can be
// filled or checked on its own.
func soakFillFrom(buf []byte, id PayloadID, from int) {
	key := id.key()
	j, w := -1, uint64(0)
	for i := range buf {
		o := from + i
		if o>>3 != j {
			j = o >> 3
			w = id.word(key, j)
		}
		buf[i] = byte(w >> (8 * (o & 7)))
	}
}

// SoakCheck returns the offset in buf of its first byte that differs from
// payload id's from offset 0, or -1 when all are right.
func SoakCheck(buf []byte, id PayloadID) int { return soakCheckFrom(buf, id, 0) }

// soakCheckFrom is SoakCheck of buf against payload id's bytes from
// offset from; the offset it returns is buf's.
func soakCheckFrom(buf []byte, id PayloadID, from int) int {
	key := id.key()
	j, w := -1, uint64(0)
	for i, b := range buf {
		o := from + i
		if o>>3 != j {
			j = o >> 3
			w = id.word(key, j)
		}
		if b != byte(w>>(8*(o&7))) {
			return i
		}
	}
	return -1
}

// logUniform draws a size from 0 to limit bytes with log(size+1) uniform:
// as many sizes from 1 to 1K as from 1K to 1M, so eager, segmented and
// rendezvous messages all come often.
func logUniform(rng *rand.Rand, limit int) int {
	if limit <= 0 {
		return 0
	}
	s := int(math.Exp(rng.Float64()*math.Log(float64(limit)+1))) - 1
	return min(max(s, 0), limit)
}

// maxPayloadErrors is how many payload errors a rank describes; the rest
// are counted only.
const maxPayloadErrors = 10

// soakErrors counts a rank's wrong payloads and describes the first few.
type soakErrors struct {
	count int64
	msgs  []string
}

// wrong records a wrong byte at offset off of a payload of size bytes
// that rank me got in step step's operation op, which was rank from's
// data (-1: no one rank's, a reduction's).
func (e *soakErrors) wrong(step int64, op string, me, from, off, size int) {
	e.count++
	if len(e.msgs) >= maxPayloadErrors {
		return
	}
	whose := "a reduction's result"
	if from >= 0 {
		whose = fmt.Sprintf("rank %d's data", from)
	}
	e.msgs = append(e.msgs, fmt.Sprintf("step %d %s: rank %d got %s with a wrong byte at offset %d of %d", step, op, me, whose, off, size))
}

// other records a payload error that is not a wrong byte: a wrong size,
// sender or tag.
func (e *soakErrors) other(step int64, op string, me int, format string, args ...any) {
	e.count++
	if len(e.msgs) < maxPayloadErrors {
		e.msgs = append(e.msgs, fmt.Sprintf("step %d %s: rank %d: ", step, op, me)+fmt.Sprintf(format, args...))
	}
}
