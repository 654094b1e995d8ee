package comm

import (
	"context"

	"github.com/commtune/commtune/internal/halo"

	"github.com/commtune/commtune/internal/core"
	"github.com/commtune/commtune/internal/driver"
)

// haloChannel is a Halo's communicator as its executors see it
// (halo.Channel): every wait watches the Halo's exchange under way as a
// call of the communicator (collcheck.go).
type haloChannel struct {
	c      *Comm
	call   *CallState // the Halo's exchange under way
	rmaCtx uint64     // the context of the one-sided posts and puts
}

// rmaSalt separates a Halo's one-sided context, where posts and puts are
// matched and nothing else travels, from its communicator's.
const rmaSalt = 0x0AE5_1DED

// HaloChannel returns c as the executors of a Halo whose exchanges are the
// watched call call see it.
func HaloChannel(c *Comm, call *CallState) halo.Channel {
	return &haloChannel{c: c, call: call, rmaCtx: mix(c.ctx, rmaSalt)}
}

func (ch *haloChannel) Rank() int { return ch.c.rank }

func (ch *haloChannel) Isend(peer, tag int, segs [][]byte, buf []byte) (*core.Request, error) {
	c := ch.c
	if err := c.checkSend(peer, tag); err != nil {
		return nil, err
	}
	if segs != nil {
		return c.ep.Eng.IsendV(c.ctx, c.group[peer], tag, segs), nil
	}
	return c.ep.Eng.Isend(c.ctx, c.group[peer], tag, buf), nil
}

func (ch *haloChannel) Irecv(peer, tag int, segs [][]byte, buf []byte) (*core.Request, error) {
	c := ch.c
	w, err := c.checkRecv(peer, tag)
	if err != nil {
		return nil, err
	}
	if segs != nil {
		return c.ep.Eng.IrecvV(c.ctx, w, tag, segs), nil
	}
	return c.ep.Eng.Irecv(c.ctx, w, tag, buf), nil
}

func (ch *haloChannel) Expose(peer, tag int, segs [][]byte) (*core.Request, error) {
	w, err := ch.c.toWorld(peer, "destination")
	if err != nil {
		return nil, err
	}
	return ch.c.ep.Eng.Expose(ch.rmaCtx, w, tag, segs), nil
}

func (ch *haloChannel) Put(peer, tag int, segs [][]byte) (*core.Request, error) {
	w, err := ch.c.toWorld(peer, "destination")
	if err != nil {
		return nil, err
	}
	return ch.c.ep.Eng.PutV(ch.rmaCtx, w, tag, segs), nil
}

func (ch *haloChannel) ReadSpans(peer int, dst [][]byte, src []driver.Span) error {
	w, err := ch.c.toWorld(peer, "destination")
	if err != nil {
		return err
	}
	return ch.c.ep.Eng.ReadSpans(w, dst, src)
}

func (ch *haloChannel) CanRead(peer int) bool {
	w, err := ch.c.toWorld(peer, "destination")
	return err == nil && ch.c.ep.Eng.CanRead(w)
}

func (ch *haloChannel) ReadableBy(peer int) bool {
	w, err := ch.c.toWorld(peer, "destination")
	return err == nil && ch.c.ep.Eng.ReadableBy(w)
}

func (ch *haloChannel) Await(ctx context.Context, r *core.Request, others []*core.Request) (core.Status, error) {
	st, err := ch.c.waitCall(ctx, ch.call, r, others)
	return core.Status{Source: st.Source, Tag: st.Tag, Count: st.Count}, err
}

// Probe waits until a message from peer with tag can be received, as
// Comm.Probe does, watching the exchange every collWatch as Await does.
func (ch *haloChannel) Probe(ctx context.Context, peer, tag int) (core.Status, error) {
	c := ch.c
	w, err := c.checkRecv(peer, tag)
	if err != nil {
		return core.Status{}, err
	}
	for {
		pctx, cancel := context.WithTimeout(ctx, collWatch)
		st, err := c.ep.Eng.Probe(pctx, c.ctx, w, tag)
		cancel()
		switch {
		case err == nil:
			s := c.Status(st)
			return core.Status{Source: s.Source, Tag: s.Tag, Count: s.Count}, nil
		case ctx.Err() != nil || pctx.Err() == nil:
			return core.Status{}, err
		}
		if err := c.watch(ch.call, nil, true); err != nil {
			return core.Status{}, err
		}
	}
}
