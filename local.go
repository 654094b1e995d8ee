package commtune

import (
	"context"
	"fmt"
	"runtime/debug"
	"sync"

	"github.com/commtune/commtune/internal/comm"
	"github.com/commtune/commtune/internal/job"
)

// Local runs fn as n ranks, each a goroutine of this process with its own
// world communicator, over the in-process driver, and returns the first
// error a rank returned (or the panic it raised), prefixed with its rank.
// A rank that fails is seen by the others as lost (their operations on it
// fail with ErrPeerLost); one that returns nil closes its communicator
// in an orderly way. Local returns when every rank has returned.
func Local(n int, fn func(c *Comm) error, opts ...Option) error {
	if n < 1 {
		return fmt.Errorf("commtune: Local needs at least one rank, got %d", n)
	}
	cfg, err := buildConfig(opts)
	if err != nil {
		return err
	}
	eps, err := job.Local(n, cfg)
	if err != nil {
		return err
	}
	comms := make([]*Comm, n)
	for r, ep := range eps {
		comms[r] = wrap(comm.NewWorld(ep, r, n))
	}
	var (
		mu    sync.Mutex
		first error
		wg    sync.WaitGroup
	)
	for r := 0; r < n; r++ {
		wg.Add(1)
		go func(r int) {
			defer wg.Done()
			var err error
			if dir := eps[r].Cfg.Trace; dir != "" {
				err = comms[r].in.StartTrace(context.Background(), dir)
			}
			if err == nil {
				err = runRank(fn, comms[r])
			}
			if err == nil {
				err = comms[r].Close()
			}
			if err != nil {
				mu.Lock()
				if first == nil {
					first = fmt.Errorf("rank %d: %w", r, err)
				}
				mu.Unlock()
				eps[r].Fail(err)
				comms[r].Close()
			}
		}(r)
	}
	wg.Wait()
	return first
}

// runRank calls fn, turning a panic into an error so one rank's bug ends
// the run cleanly instead of the process.
func runRank(fn func(*Comm) error, c *Comm) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v\n%s", p, debug.Stack())
		}
	}()
	return fn(c)
}
