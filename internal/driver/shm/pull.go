package shm

import (
	"sync"

	"github.com/commtune/commtune/internal/driver"
)

// Pulls of at least parallelPullMin are split in two halves read at once,
// one by the caller and one by a helper goroutine, when Config.ParallelPull
// allows (ranks do not outnumber processors). Measured here between two
// processes, one process_vm_readv of 4 MiB moves 12.4 GB/s and two
// concurrent halves 20.1 GB/s; handing a half to a waiting goroutine costs
// a wake-up (tens of µs), so below 1 MiB it does not pay.
const parallelPullMin = 1 << 20

// puller is the helper goroutine of parallel pulls.
type puller struct {
	once sync.Once
	work chan pullJob
}

type pullJob struct {
	pid  int
	dst  []byte
	vec  [][]byte // instead of dst: a vectored pull's half
	addr uint64
	done chan error
}

func (p *puller) start() {
	p.work = make(chan pullJob)
	go func() {
		for j := range p.work {
			var err error
			if j.vec != nil {
				_, err = processVMReadv(j.pid, j.vec, j.addr)
			} else {
				_, err = processVMRead(j.pid, j.dst, j.addr)
			}
			j.done <- err
		}
	}()
}

// Pull reads len(dst) bytes at addr in the peer's process (CMA, one copy;
// driver.Puller), in two concurrent halves when large enough.
func (rl *rail) Pull(dst []byte, addr uint64) error {
	if !rl.t.cfg.ParallelPull || len(dst) < parallelPullMin {
		_, err := processVMRead(rl.pid, dst, addr)
		return err
	}
	p := &rl.t.puller
	p.once.Do(p.start)
	half := len(dst) / 2 &^ 4095 // page-aligned split
	done := make(chan error, 1)
	p.work <- pullJob{pid: rl.pid, dst: dst[half:], addr: addr + uint64(half), done: done}
	_, err := processVMRead(rl.pid, dst[:half], addr)
	if err2 := <-done; err == nil {
		err = err2
	}
	return err
}

// PullV reads the bytes at addr in the peer's process into the parts of
// dst in order (driver.VecPuller): one process_vm_readv scatters them, so
// a receive made of segments costs the same single copy as one buffer; in
// two concurrent halves when large enough, as Pull.
func (rl *rail) PullV(dst [][]byte, addr uint64) error {
	n := 0
	for _, b := range dst {
		n += len(b)
	}
	if !rl.t.cfg.ParallelPull || n < parallelPullMin {
		_, err := processVMReadv(rl.pid, dst, addr)
		return err
	}
	p := &rl.t.puller
	p.once.Do(p.start)
	half := n / 2 &^ 4095
	done := make(chan error, 1)
	p.work <- pullJob{pid: rl.pid, vec: driver.AppendRange(nil, dst, half, n-half), addr: addr + uint64(half), done: done}
	_, err := processVMReadv(rl.pid, driver.AppendRange(nil, dst, 0, half), addr)
	if err2 := <-done; err == nil {
		err = err2
	}
	return err
}

// WriteSpans writes the parts of src into the ranges dst of the peer's
// process (driver.SpanWriter), both lists given to process_vm_writev at
// once.
func (rl *rail) WriteSpans(dst []driver.Span, src [][]byte) error {
	_, err := processVMWriteSpans(rl.pid, dst, src)
	return err
}

// ReadSpans reads the ranges src of the peer's process into the parts of
// dst (driver.SpanReader), both lists given to process_vm_readv at once.
func (rl *rail) ReadSpans(dst [][]byte, src []driver.Span) error {
	_, err := processVMReadSpans(rl.pid, dst, src)
	return err
}
