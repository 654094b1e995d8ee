package tcp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/commtune/commtune/internal/auth"
)

// The handshake (docs/wire-tcp.md) runs before any frame: the acceptor sends
// a hello with its challenge, the connector answers with its identity, its
// own challenge and its proof, and the acceptor replies with a verdict and
// its proof. Every message has a fixed size, so every read is bounded; the
// caller puts a deadline on the whole exchange.

// handshakeMagic opens the hello and the answer: "CTTC", commtune TCP.
var handshakeMagic = [4]byte{'C', 'T', 'T', 'C'}

// handshakeVersion is the version of the handshake and frame format.
const handshakeVersion = 1

// Labels bind each proof to this protocol and direction (auth.Proof).
const (
	labelConnector = "tcp/connector"
	labelAcceptor  = "tcp/acceptor"
)

// Message sizes: the hello is magic, version, rank, rail, max packet,
// challenge; the answer is the same plus a proof; the verdict is one status
// byte, followed by a proof when the status is statusOK.
const (
	helloSize   = 4 + 2 + 4 + 4 + 4 + auth.ChallengeSize
	answerSize  = helloSize + auth.ProofSize
	verdictSize = 1 + auth.ProofSize
)

// Verdict statuses. A rejection names its reason so that the connector can
// report something better than "connection reset"; none of them reveals
// anything about the secret.
const (
	statusOK        = 0
	statusDenied    = 1
	statusRank      = 2
	statusDirection = 3
	statusRail      = 4
	statusDuplicate = 5
	statusVersion   = 6
	statusClosing   = 7
	statusMaxPacket = 8
)

// Reasons a handshake fails. The acceptor's admit callback returns the ones
// that depend on the mesh (duplicate, closing).
var (
	errNotHandshake = errors.New("not a commtune tcp handshake (bad magic)")
	errVersion      = errors.New("unsupported handshake version")
	errRank         = errors.New("rank out of range")
	errDirection    = errors.New("this rank should not dial us (lower ranks accept from higher ones)")
	errRail         = errors.New("wrong rail")
	errDuplicate    = errors.New("duplicate connection")
	errClosing      = errors.New("transport closed")
	errMaxPacket    = errors.New("advertised MaxPacket out of range")
	errUnexpected   = errors.New("unexpected peer identity")
	errStatus       = errors.New("unknown verdict status")
)

// statusErrors maps each rejection status to its reason, both ways.
var statusErrors = []struct {
	status byte
	err    error
}{
	{statusDenied, auth.ErrDenied},
	{statusRank, errRank},
	{statusDirection, errDirection},
	{statusRail, errRail},
	{statusDuplicate, errDuplicate},
	{statusVersion, errVersion},
	{statusClosing, errClosing},
	{statusMaxPacket, errMaxPacket},
}

// statusOf returns the verdict status that tells a peer about err.
func statusOf(err error) byte {
	for _, s := range statusErrors {
		if errors.Is(err, s.err) {
			return s.status
		}
	}
	return statusClosing // the mesh cannot take the connection
}

// statusError returns the reason a verdict status stands for.
func statusError(status byte) error {
	for _, s := range statusErrors {
		if s.status == status {
			return s.err
		}
	}
	return fmt.Errorf("%w %d", errStatus, status)
}

// handshakeConfig is what this end knows before a handshake starts.
type handshakeConfig struct {
	secret    []byte
	rank      int // ours
	size      int
	maxPacket int                    // ours, advertised to the peer
	challenge func() ([]byte, error) // auth.NewChallenge; fixed in fuzz tests
}

// handshakeResult is what a successful handshake learned about the peer.
type handshakeResult struct {
	peer      int
	rail      int
	maxPacket int // the largest Packet body the peer accepts
}

// u32 encodes v for the wire and for proof bindings.
func u32(v int) []byte {
	return binary.LittleEndian.AppendUint32(nil, uint32(v))
}

// acceptHandshake runs the acceptor's side over rw for a connection that
// arrived on rail. admit checks what depends on the mesh (is this peer
// expected to dial us, is the slot free) once the peer has proved itself. On
// a rejection it tells the peer why (best effort) and returns the reason.
func acceptHandshake(rw io.ReadWriter, c *handshakeConfig, rail int, admit func(peer, rail int) error) (handshakeResult, error) {
	challenge, err := c.challenge()
	if err != nil {
		return handshakeResult{}, err
	}
	var hello [helloSize]byte
	putHello(hello[:], c.rank, rail, c.maxPacket, challenge)
	if _, err := rw.Write(hello[:]); err != nil {
		return handshakeResult{}, fmt.Errorf("sending hello: %w", err)
	}

	var ans [answerSize]byte
	if _, err := io.ReadFull(rw, ans[:]); err != nil {
		return handshakeResult{}, fmt.Errorf("reading answer: %w", err)
	}
	if [4]byte(ans[0:4]) != handshakeMagic {
		return handshakeResult{}, errNotHandshake
	}
	reject := func(err error) (handshakeResult, error) {
		rw.Write([]byte{statusOf(err)}) // best effort: the peer may be gone already
		return handshakeResult{}, err
	}
	if v := binary.LittleEndian.Uint16(ans[4:6]); v != handshakeVersion {
		return reject(fmt.Errorf("%w %d, want %d", errVersion, v, handshakeVersion))
	}
	peer := binary.LittleEndian.Uint32(ans[6:10])
	peerRail := binary.LittleEndian.Uint32(ans[10:14])
	peerMax := binary.LittleEndian.Uint32(ans[14:18])
	peerChallenge := ans[18 : 18+auth.ChallengeSize]
	proof := ans[18+auth.ChallengeSize:]
	if uint64(peer) >= uint64(c.size) {
		return reject(fmt.Errorf("%w: rank %d in a job of %d", errRank, peer, c.size))
	}
	if int(peer) <= c.rank {
		return reject(fmt.Errorf("%w: rank %d dialed rank %d", errDirection, peer, c.rank))
	}
	if int64(peerRail) != int64(rail) {
		return reject(fmt.Errorf("%w: rank %d says rail %d on our rail %d", errRail, peer, peerRail, rail))
	}
	r := handshakeResult{peer: int(peer), rail: rail, maxPacket: int(min(peerMax, MaxMaxPacket))}
	if err := auth.Verify(c.secret, labelConnector, challenge, proof, u32(r.peer), u32(c.rank), u32(rail)); err != nil {
		return reject(err)
	}
	if peerMax < MinMaxPacket {
		return reject(fmt.Errorf("%w: rank %d says %d", errMaxPacket, peer, peerMax))
	}
	if err := admit(r.peer, rail); err != nil {
		return reject(fmt.Errorf("rank %d rail %d: %w", peer, rail, err))
	}

	var verdict [verdictSize]byte
	verdict[0] = statusOK
	copy(verdict[1:], auth.Proof(c.secret, labelAcceptor, peerChallenge, u32(r.peer), u32(c.rank), u32(rail)))
	if _, err := rw.Write(verdict[:]); err != nil {
		return handshakeResult{}, fmt.Errorf("sending verdict: %w", err)
	}
	return r, nil
}

// connectHandshake runs the connector's side over rw with the rank peer on
// rail: it checks that it reached who it meant to, proves itself, and
// verifies the acceptor's proof.
func connectHandshake(rw io.ReadWriter, c *handshakeConfig, peer, rail int) (handshakeResult, error) {
	var hello [helloSize]byte
	if _, err := io.ReadFull(rw, hello[:]); err != nil {
		return handshakeResult{}, fmt.Errorf("reading hello: %w", err)
	}
	if [4]byte(hello[0:4]) != handshakeMagic {
		return handshakeResult{}, errNotHandshake
	}
	if v := binary.LittleEndian.Uint16(hello[4:6]); v != handshakeVersion {
		return handshakeResult{}, fmt.Errorf("%w %d, want %d", errVersion, v, handshakeVersion)
	}
	gotRank := binary.LittleEndian.Uint32(hello[6:10])
	gotRail := binary.LittleEndian.Uint32(hello[10:14])
	peerMax := binary.LittleEndian.Uint32(hello[14:18])
	peerChallenge := hello[18 : 18+auth.ChallengeSize]
	if int64(gotRank) != int64(peer) || int64(gotRail) != int64(rail) {
		return handshakeResult{}, fmt.Errorf("%w: dialed rank %d rail %d, reached rank %d rail %d",
			errUnexpected, peer, rail, gotRank, gotRail)
	}
	if peerMax < MinMaxPacket {
		return handshakeResult{}, fmt.Errorf("%w: rank %d says %d", errMaxPacket, peer, peerMax)
	}

	challenge, err := c.challenge()
	if err != nil {
		return handshakeResult{}, err
	}
	var ans [answerSize]byte
	putHello(ans[:helloSize], c.rank, rail, c.maxPacket, challenge)
	copy(ans[helloSize:], auth.Proof(c.secret, labelConnector, peerChallenge, u32(c.rank), u32(peer), u32(rail)))
	if _, err := rw.Write(ans[:]); err != nil {
		return handshakeResult{}, fmt.Errorf("sending answer: %w", err)
	}

	var verdict [verdictSize]byte
	if _, err := io.ReadFull(rw, verdict[:1]); err != nil {
		return handshakeResult{}, fmt.Errorf("reading verdict: %w", err)
	}
	if s := verdict[0]; s != statusOK {
		return handshakeResult{}, fmt.Errorf("rank %d rejected the connection: %w", peer, statusError(s))
	}
	if _, err := io.ReadFull(rw, verdict[1:]); err != nil {
		return handshakeResult{}, fmt.Errorf("reading verdict: %w", err)
	}
	if err := auth.Verify(c.secret, labelAcceptor, challenge, verdict[1:], u32(c.rank), u32(peer), u32(rail)); err != nil {
		return handshakeResult{}, err
	}
	return handshakeResult{peer: peer, rail: rail, maxPacket: int(min(peerMax, MaxMaxPacket))}, nil
}

// putHello encodes the fields the hello and the answer share into b.
func putHello(b []byte, rank, rail, maxPacket int, challenge []byte) {
	copy(b[0:4], handshakeMagic[:])
	binary.LittleEndian.PutUint16(b[4:6], handshakeVersion)
	binary.LittleEndian.PutUint32(b[6:10], uint32(rank))
	binary.LittleEndian.PutUint32(b[10:14], uint32(rail))
	binary.LittleEndian.PutUint32(b[14:18], uint32(maxPacket))
	copy(b[18:18+auth.ChallengeSize], challenge)
}
