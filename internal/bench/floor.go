package bench

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/commtune/commtune"
)

// The floor is what moving a word through shared memory costs here, with
// no library in the way: one 64-byte line written by one side and spun on
// by the other. Between two processes it is the least a small operation of
// the node segment can cost; between two goroutines, the least for
// goroutine ranks. Two patterns:
//
//   - ping-pong: each side writes a number into its own line and spins on
//     the other's until it reads the same number back (a round trip per
//     iteration; one way is half of it);
//   - allreduce: each side writes a value and the call's number into its
//     own line (two places by the call's parity, so that the next call
//     does not overwrite a value the other side still reads), waits for
//     the other's number, and adds the two values: an 8-byte Allreduce of
//     two ranks at its floor.

// FloorConfig sets a floor run.
type FloorConfig struct {
	Calls int // timed iterations per pattern (after as many untimed)
}

// FloorReport is what Floor measured: per pattern, between the job's two
// processes and between two goroutines of rank 0's process. Times are one
// way for ping-pong, per call (the slower side's) for allreduce.
type FloorReport struct {
	Bench              string     `json:"bench"` // "floor"
	Calls              int        `json:"calls"`
	ProcessPingPong    FloorTimes `json:"process_pingpong"`
	ProcessAllreduce   FloorTimes `json:"process_allreduce"`
	GoroutinePingPong  FloorTimes `json:"goroutine_pingpong"`
	GoroutineAllreduce FloorTimes `json:"goroutine_allreduce"`
	// ProcessAllreduceSum is the last call's sum between the processes:
	// 2, each side giving 1, when the pattern exchanged its values.
	ProcessAllreduceSum int64 `json:"process_allreduce_sum"`
}

// FloorTimes summarizes one pattern's times, in microseconds.
type FloorTimes struct {
	Mean float64 `json:"mean_us"`
	P50  float64 `json:"p50_us"`
	P99  float64 `json:"p99_us"`
	Max  float64 `json:"max_us"`
}

func floorTimes(s Summary) FloorTimes { return FloorTimes{s.Mean, s.P50, s.P99, s.Max} }

// floorLine is the bytes each side owns: two lines, ping-pong's and
// allreduce's (value and number by parity).
const floorLine = 64

// Floor measures the floor between ranks 0 and 1 of c (a 2-rank job on
// one node); rank 0 returns the report, its goroutine pair left for
// FloorGoroutines (a rank bound to one processor would run both
// goroutines on it).
func Floor(ctx context.Context, c *commtune.Comm, cfg FloorConfig) (*FloorReport, error) {
	if c.Size() != 2 {
		return nil, fmt.Errorf("bench floor: %d ranks, want 2", c.Size())
	}
	if cfg.Calls < 1 {
		return nil, fmt.Errorf("bench floor: %d calls", cfg.Calls)
	}
	reg, err := c.AllocShared(ctx, 2*floorLine)
	if err != nil {
		return nil, fmt.Errorf("bench floor: %w", err)
	}
	defer reg.Close()
	me := c.Rank()
	mine, theirs := reg.Part(me), reg.Part(1-me)
	if err := c.Barrier(ctx); err != nil {
		return nil, err
	}
	rep := &FloorReport{Bench: "floor", Calls: cfg.Calls}
	pp := floorPingPong(mine, theirs, me == 0, cfg.Calls)
	if err := c.Barrier(ctx); err != nil {
		return nil, err
	}
	ar, sum := floorAllreduce(mine[floorLine:], theirs[floorLine:], cfg.Calls)
	slowest, err := slowestPerCall(ctx, c, ar)
	if err != nil {
		return nil, err
	}
	if me != 0 {
		return nil, c.Barrier(ctx)
	}
	rep.ProcessPingPong = floorTimes(SummaryOf(halves(pp)))
	rep.ProcessAllreduce = floorTimes(SummaryOf(slowest))
	rep.ProcessAllreduceSum = sum
	return rep, c.Barrier(ctx)
}

// word is the 8-byte word at off in b.
func word(b []byte, off int) *atomic.Uint64 { return (*atomic.Uint64)(unsafe.Pointer(&b[off])) }

// floorPingPong runs calls timed round trips (after as many untimed) and
// returns the first side's times (the second's are empty).
func floorPingPong(mine, theirs []byte, first bool, calls int) []time.Duration {
	out, in := word(mine, 0), word(theirs, 0)
	var times []time.Duration
	if first {
		times = make([]time.Duration, 0, calls)
	}
	prev := time.Now()
	for i := uint64(1); i <= uint64(2*calls); i++ {
		if first {
			out.Store(i)
			spinUntil(in, i)
			if i > uint64(calls) {
				now := time.Now()
				times, prev = append(times, now.Sub(prev)), now
			} else {
				prev = time.Now()
			}
		} else {
			spinUntil(in, i)
			out.Store(i)
		}
	}
	return times
}

// floorAllreduce runs calls timed two-rank allreduces of the value 1 (after
// as many untimed) and returns this side's times and the last sum.
func floorAllreduce(mine, theirs []byte, calls int) ([]time.Duration, int64) {
	times := make([]time.Duration, 0, calls)
	var sum int64
	prev := time.Now()
	for i := uint64(1); i <= uint64(2*calls); i++ {
		slot := 16 * int(i&1) // value, then number
		*(*int64)(unsafe.Pointer(&mine[slot])) = 1
		word(mine, slot+8).Store(i)
		spinUntil(word(theirs, slot+8), i)
		sum = 1 + *(*int64)(unsafe.Pointer(&theirs[slot]))
		if i > uint64(calls) {
			now := time.Now()
			times, prev = append(times, now.Sub(prev)), now
		} else {
			prev = time.Now()
		}
	}
	return times, sum
}

// spinUntil spins until w reads at least v, yielding to the process's
// other goroutines now and then as any waiter must.
func spinUntil(w *atomic.Uint64, v uint64) {
	for i := 1; w.Load() < v; i++ {
		if i%64 == 0 {
			runtime.Gosched()
		}
	}
}

// FloorGoroutines runs both patterns between two goroutines of this
// process on lines of ordinary memory, each side on lines of its own.
func FloorGoroutines(calls int) (pingPong, allreduce FloorTimes) {
	buf := make([]byte, 6*floorLine)
	off := int(-uintptr(unsafe.Pointer(&buf[0])) & (floorLine - 1))
	a, b := buf[off:off+2*floorLine], buf[off+2*floorLine:off+4*floorLine]
	var pp []time.Duration
	var ar [2][]time.Duration
	var wg sync.WaitGroup
	wg.Go(func() { pp = floorPingPong(a, b, true, calls) })
	wg.Go(func() { floorPingPong(b, a, false, calls) })
	wg.Wait()
	wg.Go(func() { ar[0], _ = floorAllreduce(a[floorLine:], b[floorLine:], calls) })
	wg.Go(func() { ar[1], _ = floorAllreduce(b[floorLine:], a[floorLine:], calls) })
	wg.Wait()
	slowest := make([]float64, calls)
	for i := range slowest {
		slowest[i] = float64(max(ar[0][i], ar[1][i]).Nanoseconds())
	}
	return floorTimes(SummaryOf(halves(pp))), floorTimes(SummaryOf(slowest))
}

// halves returns each round trip's half, in nanoseconds: one way.
func halves(rtt []time.Duration) []float64 {
	out := make([]float64, len(rtt))
	for i, d := range rtt {
		out[i] = float64(d.Nanoseconds()) / 2
	}
	return out
}
