package comm

import "github.com/commtune/commtune/internal/core"

// nbrSalt separates a communicator's neighbourhood collectives, matched by
// their own tags and in list order, from its other traffic.
const nbrSalt = 0x4E_1B_0C0

// NeighborIsend starts a neighbourhood collective's send of buf to dest,
// on c's neighbourhood context.
func (c *Comm) NeighborIsend(buf []byte, dest, tag int) (*core.Request, error) {
	return c.isend(buf, dest, tag, mix(c.ctx, nbrSalt))
}

// NeighborIrecv starts a neighbourhood collective's receive into buf from
// src, on c's neighbourhood context.
func (c *Comm) NeighborIrecv(buf []byte, src, tag int) (*core.Request, error) {
	return c.irecv(buf, src, tag, mix(c.ctx, nbrSalt))
}
