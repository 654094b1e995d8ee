package commtune

import (
	"context"

	"github.com/commtune/commtune/internal/observe"
)

// The one-sided calls the library observes (counters, timeline), as the
// API names them; a window's access and exposure epochs by MPI's names.
var (
	opPut            = observe.Register("Put", observe.CatRMA)
	opGet            = observe.Register("Get", observe.CatRMA)
	opAccumulate     = observe.Register("Accumulate", observe.CatRMA)
	opGetAccumulate  = observe.Register("GetAccumulate", observe.CatRMA)
	opFetchAndOp     = observe.Register("FetchAndOp", observe.CatRMA)
	opCompareAndSwap = observe.Register("CompareAndSwap", observe.CatRMA)
	opRput           = observe.Register("Rput", observe.CatRMA)
	opRget           = observe.Register("Rget", observe.CatRMA)
	opRaccumulate    = observe.Register("Raccumulate", observe.CatRMA)
	opRgetAccumulate = observe.Register("RgetAccumulate", observe.CatRMA)
	opRMAWait        = observe.Register("RMAWait", observe.CatWait)
	opFence          = observe.Register("Fence", observe.CatRMA)
	opLock           = observe.Register("Lock", observe.CatRMA)
	opUnlock         = observe.Register("Unlock", observe.CatRMA)
	opLockAll        = observe.Register("LockAll", observe.CatRMA)
	opUnlockAll      = observe.Register("UnlockAll", observe.CatRMA)
	opFlush          = observe.Register("Flush", observe.CatRMA)
	opFlushAll       = observe.Register("FlushAll", observe.CatRMA)
	opFlushLocal     = observe.Register("FlushLocal", observe.CatRMA)
	opFlushLocalAll  = observe.Register("FlushLocalAll", observe.CatRMA)
	opWinPost        = observe.Register("WinPost", observe.CatRMA)
	opWinStart       = observe.Register("WinStart", observe.CatRMA)
	opWinComplete    = observe.Register("WinComplete", observe.CatRMA)
	opWinWait        = observe.Register("WinWait", observe.CatRMA)
)

// rmaCall is one observed one-sided call on a window of communicator c.
type rmaCall struct {
	c *Comm
	t observe.Token
}

// beginRMA starts observing a one-sided call of op on c.
func beginRMA(c *Comm, op observe.Op) rmaCall { return rmaCall{c, c.begin(op)} }

// end ends the observation of a call of op that moved bytes (<0: none) to
// or from target (a rank of the communicator; <0: none) and returned err,
// which it returns. Its bytes count in the operation's line of the
// profile, not in the peer's point-to-point traffic.
func (r rmaCall) end(ctx context.Context, op observe.Op, bytes, target int, err error) error {
	if r.t.On() {
		r.endSlow(ctx, op, bytes, target, err)
	}
	return err
}

func (r rmaCall) endSlow(ctx context.Context, op observe.Op, bytes, target int, err error) {
	wp := observe.NoRank
	if target >= 0 && target < r.c.in.Size() {
		wp = r.c.in.WorldRank(target)
	}
	r.c.in.Recorder().End(ctx, r.t, r.c.in, &observe.Call{Op: op, Bytes: int64(bytes), Peer: observe.NoRank, WorldPeer: wp,
		WorldRoot: observe.NoRank, Err: err})
}
