package boot

import (
	"encoding/binary"
	"fmt"
	"io"

	"github.com/commtune/commtune/internal/auth"
)

// The handshake runs before any frame: both ends prove they hold the job
// secret (internal/auth), bound to the rank the client claims, so a proof
// for one rank or one direction is useless for another. Fixed-size
// messages only, so an unauthenticated peer makes the server parse no
// length and allocate nothing. docs/kvs.md, "Handshake".
const (
	protoMagic   = "CTKV"
	protoVersion = 1

	labelClient = "kvs/client"
	labelServer = "kvs/server"

	clientHelloSize = 4 + 2 + 2 + 4 + auth.ChallengeSize              // magic, version, flags, rank, challenge
	serverHelloSize = 4 + 2 + 2 + auth.ChallengeSize + auth.ProofSize // magic, version, flags, challenge, proof

	verdictAccepted = 0
	verdictDenied   = 1
)

// errNotKVS is wrapped when the peer does not speak this protocol at all.
var errNotKVS = fmt.Errorf("%w: peer is not a commtune kvs (bad magic)", ErrProtocol)

func rankBinding(rank uint32) []byte { return binary.LittleEndian.AppendUint32(nil, rank) }

// clientHandshake authenticates rw's server and proves the client's
// membership as rank. The caller bounds it in time (a deadline on the conn).
func clientHandshake(rw io.ReadWriter, secret []byte, rank uint32) error {
	challenge, err := auth.NewChallenge()
	if err != nil {
		return err
	}
	hello := make([]byte, 0, clientHelloSize)
	hello = append(hello, protoMagic...)
	hello = binary.LittleEndian.AppendUint16(hello, protoVersion)
	hello = binary.LittleEndian.AppendUint16(hello, 0)
	hello = binary.LittleEndian.AppendUint32(hello, rank)
	hello = append(hello, challenge...)
	if _, err := rw.Write(hello); err != nil {
		return fmt.Errorf("sending hello: %w", err)
	}

	var sh [serverHelloSize]byte
	if _, err := io.ReadFull(rw, sh[:]); err != nil {
		return fmt.Errorf("reading server hello: %w", err)
	}
	if string(sh[:4]) != protoMagic {
		return errNotKVS
	}
	if v := binary.LittleEndian.Uint16(sh[4:]); v != protoVersion {
		return fmt.Errorf("%w: server speaks kvs protocol version %d, this rank speaks %d", ErrProtocol, v, protoVersion)
	}
	serverChallenge := sh[8 : 8+auth.ChallengeSize]
	serverProof := sh[8+auth.ChallengeSize:]
	bind := rankBinding(rank)
	if err := auth.Verify(secret, labelServer, challenge, serverProof, bind); err != nil {
		return fmt.Errorf("kvs server: %w", err)
	}

	if _, err := rw.Write(auth.Proof(secret, labelClient, serverChallenge, bind)); err != nil {
		return fmt.Errorf("sending proof: %w", err)
	}
	var verdict [1]byte
	if _, err := io.ReadFull(rw, verdict[:]); err != nil {
		return fmt.Errorf("reading verdict: %w", err)
	}
	if verdict[0] != verdictAccepted {
		return fmt.Errorf("kvs server refused this rank: %w", auth.ErrDenied)
	}
	return nil
}

// serverHandshake authenticates a client and returns the rank its proof is
// bound to. The rank is not range-checked here: HELLO does that, with a
// reply the client can report.
func serverHandshake(rw io.ReadWriter, secret []byte) (rank uint32, err error) {
	var ch [clientHelloSize]byte
	if _, err := io.ReadFull(rw, ch[:]); err != nil {
		return 0, fmt.Errorf("reading client hello: %w", err)
	}
	if string(ch[:4]) != protoMagic {
		return 0, errNotKVS
	}
	version := binary.LittleEndian.Uint16(ch[4:])
	rank = binary.LittleEndian.Uint32(ch[8:])
	clientChallenge := ch[12:]

	challenge, err := auth.NewChallenge()
	if err != nil {
		return 0, err
	}
	bind := rankBinding(rank)
	sh := make([]byte, 0, serverHelloSize)
	sh = append(sh, protoMagic...)
	sh = binary.LittleEndian.AppendUint16(sh, protoVersion)
	sh = binary.LittleEndian.AppendUint16(sh, 0)
	sh = append(sh, challenge...)
	sh = append(sh, auth.Proof(secret, labelServer, clientChallenge, bind)...)
	if _, err := rw.Write(sh); err != nil {
		return 0, fmt.Errorf("sending server hello: %w", err)
	}
	// The server answers first either way, so a client of another version
	// learns which one this server speaks.
	if version != protoVersion {
		return 0, fmt.Errorf("%w: client speaks kvs protocol version %d, want %d", ErrProtocol, version, protoVersion)
	}

	var proof [auth.ProofSize]byte
	if _, err := io.ReadFull(rw, proof[:]); err != nil {
		return 0, fmt.Errorf("reading client proof: %w", err)
	}
	if err := auth.Verify(secret, labelClient, challenge, proof[:], bind); err != nil {
		rw.Write([]byte{verdictDenied}) // best effort: the client learns why
		return 0, fmt.Errorf("client claiming rank %d: %w", rank, err)
	}
	if _, err := rw.Write([]byte{verdictAccepted}); err != nil {
		return 0, fmt.Errorf("sending verdict: %w", err)
	}
	return rank, nil
}
