package commtune

import (
	"context"

	"github.com/commtune/commtune/internal/comm"
	"github.com/commtune/commtune/internal/core"
)

// ErrRevoked is returned by every operation on a communicator that one of
// its ranks revoked (Comm.Revoke), except the recovery calls: Agree,
// Shrink, AckFailed, FailedRanks and Revoke itself.
var ErrRevoked = core.ErrRevoked

// FailedRanksError is the error of an Agree some of whose members had
// failed: Ranks are their ranks in the communicator, ascending, the same
// on every member that returns. errors.Is(err, ErrPeerLost) holds.
type FailedRanksError = comm.FailedRanksError

// Revoke revokes c for every member (MPIX_Comm_revoke): every operation
// of c pending on any rank that has not matched, and every later one,
// fails with ErrRevoked — except Agree, Shrink, AckFailed and
// FailedRanks, which recover from it. A rank that notices a lost peer
// calls it so that the others, which may be waiting for something else,
// stop too. The word reaches every live member, even if this rank dies
// while telling them. Transfers that had matched finish. Revoking a
// revoked communicator does nothing. See docs/faults.md.
func (c *Comm) Revoke() error {
	if c == nil {
		return errNilComm
	}
	return c.in.Revoke()
}

// Revoked reports whether c is revoked, by this rank or another.
func (c *Comm) Revoked() bool { return c != nil && c.in.Revoked() }

// Shrink returns a new communicator of the members of c that are alive,
// in c's order (MPIX_Comm_shrink): every surviving member must call it,
// and each gets the same communicator. It works on a revoked c. A member
// found lost while Shrink runs is left out too. See docs/faults.md.
func (c *Comm) Shrink(ctx context.Context) (*Comm, error) {
	if c == nil {
		return nil, errNilComm
	}
	t := c.begin(opShrink)
	d, err := c.in.Shrink(ctx)
	endCall(ctx, c.in, t, opShrink, "", "", err)
	return wrap(d), err
}

// Agree is a uniform agreement that survives failures (MPIX_Comm_agree):
// every surviving member calls it, and every one that returns gets the
// same value, the bitwise AND of the flags of the members that took part.
// If members had failed — known to a member on entry and not acknowledged
// by it (AckFailed) — the error is a *FailedRanksError naming them, the
// same on every member, beside the agreed value. It works on a revoked c.
// It costs Size() rounds of messages: a recovery step, not a hot path.
func (c *Comm) Agree(ctx context.Context, flag uint64) (uint64, error) {
	if c == nil {
		return 0, errNilComm
	}
	t := c.begin(opAgree)
	v, err := c.in.Agree(ctx, flag)
	endCall(ctx, c.in, t, opAgree, "", "", err)
	return v, err
}

// FailedRanks returns the ranks of c that this rank knows are lost —
// crashed, or closed — ascending (MPIX_Comm_get_failed). Ranks learn of a
// loss at different moments: use Agree or Shrink for a view every member
// shares.
func (c *Comm) FailedRanks() ([]int, error) {
	if c == nil {
		return nil, errNilComm
	}
	return c.in.FailedRanks()
}

// AckFailed acknowledges the losses FailedRanks reports now and returns
// the ranks acknowledged so far (MPIX_Comm_ack_failed): after it,
// any-source receives on c work again (they fail while a crashed member
// is not acknowledged, since the message awaited may have been its), and
// Agree no longer reports those ranks.
func (c *Comm) AckFailed() ([]int, error) {
	if c == nil {
		return nil, errNilComm
	}
	return c.in.AckFailed()
}
