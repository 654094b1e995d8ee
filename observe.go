package commtune

import (
	"context"

	"github.com/commtune/commtune/internal/comm"
	"github.com/commtune/commtune/internal/observe"
)

// The calls the library observes (counters, timeline) besides the
// collectives, which internal/comm names. A call that another observed
// call makes inside the library is not observed again: the report would
// count its time twice.
var (
	opSend            = observe.Register("Send", observe.CatP2P)
	opRecv            = observe.Register("Recv", observe.CatP2P)
	opIsend           = observe.Register("Isend", observe.CatP2P)
	opIrecv           = observe.Register("Irecv", observe.CatP2P)
	opSsend           = observe.Register("Ssend", observe.CatP2P)
	opIssend          = observe.Register("Issend", observe.CatP2P)
	opSendrecv        = observe.Register("Sendrecv", observe.CatP2P)
	opSendrecvReplace = observe.Register("SendrecvReplace", observe.CatP2P)
	opProbe           = observe.Register("Probe", observe.CatP2P)
	opWait            = observe.Register("Wait", observe.CatWait)
	opStart           = observe.Register("Start", observe.CatP2P)
	opCollStart       = observe.Register("CollStart", observe.CatColl)
	opCollWait        = observe.Register("CollWait", observe.CatWait)
	opWaitAll         = observe.Register("WaitAll", observe.CatWait)
	opHaloExchange    = observe.Register("HaloExchange", observe.CatHalo)
	opHaloStart       = observe.Register("HaloStart", observe.CatHalo)
	opHaloWait        = observe.Register("HaloWait", observe.CatHalo)
	opAgree           = observe.Register("Agree", observe.CatRecovery)
	opShrink          = observe.Register("Shrink", observe.CatRecovery)
	opSplit           = observe.Register("Split", observe.CatComm)
)

// begin starts observing a call of op on c (a communicator checked not
// nil).
func (c *Comm) begin(op observe.Op) observe.Token { return c.in.Recorder().Begin(op, c.in) }

// endP2P ends the observation of a point-to-point call with peer (a rank
// of c, AnySource, or observe.NoRank), that moved bytes.
func (c *Comm) endP2P(ctx context.Context, t observe.Token, op observe.Op, bytes, peer int, send bool, err error) {
	if t.On() {
		c.endP2PSlow(ctx, t, op, bytes, peer, send, err)
	}
}

func (c *Comm) endP2PSlow(ctx context.Context, t observe.Token, op observe.Op, bytes, peer int, send bool, err error) {
	wp := observe.NoRank
	switch {
	case peer == AnySource:
		wp = observe.AnyPeer
	case peer >= 0 && peer < c.in.Size():
		wp = c.in.WorldRank(peer)
	}
	c.in.Recorder().End(ctx, t, c.in, &observe.Call{Op: op, Bytes: int64(bytes), Peer: peer, Send: send, WorldPeer: wp, WorldRoot: observe.NoRank, Err: err})
}

// endCall ends the observation of a call with no peer, root or payload of
// its own; alg and by name the path it took ("" for none).
func endCall(ctx context.Context, in *comm.Comm, t observe.Token, op observe.Op, alg, by string, err error) {
	endOp(ctx, in, t, op, -1, alg, by, err)
}

// endOp ends the observation of a call with no peer or root that carried
// bytes of this rank's (<0: none) along alg, chosen by by ("" for none).
func endOp(ctx context.Context, in *comm.Comm, t observe.Token, op observe.Op, bytes int, alg, by string, err error) {
	if t.On() {
		endOpSlow(ctx, in, t, op, bytes, alg, by, err)
	}
}

func endOpSlow(ctx context.Context, in *comm.Comm, t observe.Token, op observe.Op, bytes int, alg, by string, err error) {
	in.Recorder().End(ctx, t, in, &observe.Call{Op: op, Bytes: int64(bytes), Peer: observe.NoRank, WorldPeer: observe.NoRank,
		WorldRoot: observe.NoRank, Alg: alg, By: by, Err: err})
}
