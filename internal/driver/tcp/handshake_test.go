package tcp

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/commtune/commtune/internal/auth"
)

// Fixed challenges make handshake transcripts reproducible (fuzz seeds).
var (
	acceptorChallenge  = bytes.Repeat([]byte{0xa5}, auth.ChallengeSize)
	connectorChallenge = bytes.Repeat([]byte{0x5a}, auth.ChallengeSize)
)

func fixed(c []byte) func() ([]byte, error) {
	return func() ([]byte, error) { return c, nil }
}

// hsConfig is a handshake configuration for rank in a job of 3 ranks with
// 2 rails.
func hsConfig(rank int, challenge []byte) handshakeConfig {
	return handshakeConfig{
		secret: testSecret, rank: rank, size: 3,
		maxPacket: DefaultMaxPacket, challenge: fixed(challenge),
	}
}

// answer builds the connector's answer by hand.
func answer(c handshakeConfig, acceptor, rail int, version uint16, accChallenge []byte) []byte {
	b := make([]byte, answerSize)
	putHello(b, c.rank, rail, c.maxPacket, connectorChallenge)
	binary.LittleEndian.PutUint16(b[4:6], version)
	copy(b[helloSize:], auth.Proof(c.secret, labelConnector, accChallenge, u32(c.rank), u32(acceptor), u32(rail)))
	return b
}

// hello builds the acceptor's hello by hand.
func hello(rank, rail, maxPacket int, version uint16) []byte {
	b := make([]byte, helloSize)
	putHello(b, rank, rail, maxPacket, acceptorChallenge)
	binary.LittleEndian.PutUint16(b[4:6], version)
	return b
}

// verdictOK builds an acceptor's accepting verdict by hand.
func verdictOK(secret []byte, connector, acceptor, rail int) []byte {
	return append([]byte{statusOK}, auth.Proof(secret, labelAcceptor, connectorChallenge, u32(connector), u32(acceptor), u32(rail))...)
}

// script is a peer that sends fixed bytes and records what it is sent.
type script struct {
	in  io.Reader
	out bytes.Buffer
}

func (s *script) Read(p []byte) (int, error)  { return s.in.Read(p) }
func (s *script) Write(p []byte) (int, error) { return s.out.Write(p) }

func TestHandshakePipe(t *testing.T) {
	admitAll := func(int, int) error { return nil }
	tests := []struct {
		name       string
		acc, con   handshakeConfig
		accRail    int
		dialRank   int // whom the connector means to reach
		dialRail   int
		admit      func(int, int) error
		wantAcc    error // nil: success; errAny: any error
		wantCon    error
		wantResult handshakeResult // the acceptor's, on success
	}{
		{name: "ok", acc: hsConfig(0, acceptorChallenge), con: hsConfig(2, connectorChallenge),
			accRail: 1, dialRank: 0, dialRail: 1, admit: admitAll,
			wantResult: handshakeResult{peer: 2, rail: 1, maxPacket: DefaultMaxPacket}},
		{name: "wrong secret", acc: hsConfig(0, acceptorChallenge),
			con: func() handshakeConfig {
				c := hsConfig(2, connectorChallenge)
				c.secret = []byte("another secret, same length.....")
				return c
			}(),
			dialRail: 0, admit: admitAll, wantAcc: auth.ErrDenied, wantCon: auth.ErrDenied},
		{name: "rank out of range", acc: hsConfig(0, acceptorChallenge),
			con:      func() handshakeConfig { c := hsConfig(7, connectorChallenge); return c }(),
			dialRail: 0, admit: admitAll, wantAcc: errRank, wantCon: errRank},
		{name: "lower rank dials", acc: hsConfig(2, acceptorChallenge), con: hsConfig(1, connectorChallenge),
			dialRank: 2, admit: admitAll, wantAcc: errDirection, wantCon: errDirection},
		{name: "own rank dials", acc: hsConfig(1, acceptorChallenge), con: hsConfig(1, connectorChallenge),
			dialRank: 1, admit: admitAll, wantAcc: errDirection, wantCon: errDirection},
		{name: "duplicate", acc: hsConfig(0, acceptorChallenge), con: hsConfig(1, connectorChallenge),
			admit: func(int, int) error { return errDuplicate }, wantAcc: errDuplicate, wantCon: errDuplicate},
		{name: "closing", acc: hsConfig(0, acceptorChallenge), con: hsConfig(1, connectorChallenge),
			admit: func(int, int) error { return errClosing }, wantAcc: errClosing, wantCon: errClosing},
		{name: "reached the wrong rank", acc: hsConfig(0, acceptorChallenge), con: hsConfig(2, connectorChallenge),
			dialRank: 1, admit: admitAll, wantAcc: errAny, wantCon: errUnexpected},
		{name: "reached the wrong rail", acc: hsConfig(0, acceptorChallenge), con: hsConfig(2, connectorChallenge),
			accRail: 1, dialRail: 0, admit: admitAll, wantAcc: errAny, wantCon: errUnexpected},
		{name: "connector MaxPacket too small", acc: hsConfig(0, acceptorChallenge),
			con:   func() handshakeConfig { c := hsConfig(1, connectorChallenge); c.maxPacket = 10; return c }(),
			admit: admitAll, wantAcc: errMaxPacket, wantCon: errMaxPacket},
		{name: "acceptor MaxPacket too small",
			acc:   func() handshakeConfig { c := hsConfig(0, acceptorChallenge); c.maxPacket = 10; return c }(),
			con:   hsConfig(1, connectorChallenge),
			admit: admitAll, wantAcc: errAny, wantCon: errMaxPacket},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, c := net.Pipe()
			a.SetDeadline(time.Now().Add(wait))
			c.SetDeadline(time.Now().Add(wait))
			type result struct {
				res handshakeResult
				err error
			}
			accDone := make(chan result, 1)
			go func() {
				res, err := acceptHandshake(a, &tt.acc, tt.accRail, tt.admit)
				a.Close()
				accDone <- result{res, err}
			}()
			conRes, conErr := connectHandshake(c, &tt.con, tt.dialRank, tt.dialRail)
			c.Close()
			acc := <-accDone
			check(t, "acceptor", acc.err, tt.wantAcc)
			check(t, "connector", conErr, tt.wantCon)
			if tt.wantAcc == nil && acc.res != tt.wantResult {
				t.Errorf("acceptor learned %+v, want %+v", acc.res, tt.wantResult)
			}
			if tt.wantCon == nil && conRes != (handshakeResult{peer: tt.dialRank, rail: tt.dialRail, maxPacket: tt.acc.maxPacket}) {
				t.Errorf("connector learned %+v", conRes)
			}
		})
	}
}

// errAny stands for "some error" in test tables.
var errAny = errors.New("any error")

func check(t *testing.T, side string, got, want error) {
	t.Helper()
	switch {
	case want == nil && got != nil:
		t.Errorf("%s: %v, want success", side, got)
	case want == errAny && got == nil:
		t.Errorf("%s succeeded, want an error", side)
	case want != nil && want != errAny && !errors.Is(got, want):
		t.Errorf("%s: %v, want %v", side, got, want)
	}
}

// TestHandshakeScripted plays hand-made peers against each side.
func TestHandshakeScripted(t *testing.T) {
	con := hsConfig(1, connectorChallenge)
	tests := []struct {
		name       string
		acceptor   bool // play against the acceptor (else the connector)
		peer       []byte
		want       error
		wantStatus int // acceptor side: the verdict status sent; -1 none
	}{
		{"acceptor ok", true, answer(con, 0, 0, handshakeVersion, acceptorChallenge), nil, statusOK},
		{"acceptor wrong rail", true, answer(con, 0, 1, handshakeVersion, acceptorChallenge), errRail, statusRail},
		{"acceptor bad version", true, answer(con, 0, 0, 99, acceptorChallenge), errVersion, statusVersion},
		{"acceptor replayed proof", true, answer(con, 0, 0, handshakeVersion, connectorChallenge), auth.ErrDenied, statusDenied},
		{"acceptor garbage", true, bytes.Repeat([]byte("GET / HTTP/1.1\r\n"), 8), errNotHandshake, -1},
		{"acceptor truncated", true, answer(con, 0, 0, handshakeVersion, acceptorChallenge)[:40], io.ErrUnexpectedEOF, -1},
		{"acceptor silent", true, nil, io.EOF, -1},
		{"connector ok", false, cat(hello(0, 0, DefaultMaxPacket, handshakeVersion), verdictOK(testSecret, 1, 0, 0)), nil, -1},
		{"connector bad magic", false, bytes.Repeat([]byte{'x'}, helloSize), errNotHandshake, -1},
		{"connector bad version", false, hello(0, 0, DefaultMaxPacket, 2), errVersion, -1},
		{"connector forged proof", false, cat(hello(0, 0, DefaultMaxPacket, handshakeVersion), []byte{statusOK}, make([]byte, auth.ProofSize)), auth.ErrDenied, -1},
		{"connector wrong-secret acceptor", false, cat(hello(0, 0, DefaultMaxPacket, handshakeVersion), verdictOK([]byte("not the job secret at all......."), 1, 0, 0)), auth.ErrDenied, -1},
		{"connector rejected", false, cat(hello(0, 0, DefaultMaxPacket, handshakeVersion), []byte{statusDuplicate}), errDuplicate, -1},
		{"connector unknown status", false, cat(hello(0, 0, DefaultMaxPacket, handshakeVersion), []byte{200}), errStatus, -1},
		{"connector truncated verdict", false, cat(hello(0, 0, DefaultMaxPacket, handshakeVersion), []byte{statusOK, 1, 2}), io.ErrUnexpectedEOF, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &script{in: bytes.NewReader(tt.peer)}
			var err error
			if tt.acceptor {
				acc := hsConfig(0, acceptorChallenge)
				_, err = acceptHandshake(s, &acc, 0, func(int, int) error { return nil })
			} else {
				_, err = connectHandshake(s, &con, 0, 0)
			}
			check(t, "handshake", err, tt.want)
			if tt.acceptor {
				sent := s.out.Bytes()
				switch {
				case len(sent) < helloSize:
					t.Fatalf("acceptor sent %d bytes, want a hello first", len(sent))
				case tt.wantStatus < 0 && len(sent) != helloSize:
					t.Errorf("acceptor sent a verdict %v, want none", sent[helloSize:])
				case tt.wantStatus >= 0 && (len(sent) == helloSize || sent[helloSize] != byte(tt.wantStatus)):
					t.Errorf("acceptor verdict %v, want status %d", sent[helloSize:], tt.wantStatus)
				}
			}
		})
	}
}

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// acceptorUnderTest is rank 0 of a 2-rank job whose rank 1 the test plays.
func acceptorUnderTest(t *testing.T, edit func(*Config)) (*Transport, *recorder, *logBuffer) {
	t.Helper()
	logs := &logBuffer{}
	rec := newRecorder()
	cfg := Config{Rank: 0, Size: 2, Secret: testSecret, Handler: rec, Logger: logs.logger(),
		ListenAddrs: []string{"127.0.0.1:0", "127.0.0.1:0"}}
	if edit != nil {
		edit(&cfg)
	}
	tr, err := Listen(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	return tr, rec, logs
}

// TestHandshakeRejections runs bad peers against a live Transport: each is
// refused, closed and logged at Warn with its address and reason, and a good
// peer still gets in afterwards.
func TestHandshakeRejections(t *testing.T) {
	tests := []struct {
		name  string
		peer  func(t *testing.T, tr *Transport) // the bad peer
		want  error                             // what rawPeer returns, if it is used
		logs  []string
		short bool // shorten the handshake timeout (slowloris)
	}{
		{name: "wrong secret", peer: func(t *testing.T, tr *Transport) {
			_, err := rawPeer(t, tr, 1, 0, []byte("a different job secret.........."))
			check(t, "connector", err, auth.ErrDenied)
		}, logs: []string{"level=WARN", "tcp: rejected connection from 127.0.0.1:", "authentication failed: peer does not hold the job secret"}},
		{name: "rank out of range", peer: func(t *testing.T, tr *Transport) {
			_, err := rawPeer(t, tr, 5, 0, testSecret)
			check(t, "connector", err, errRank)
		}, logs: []string{"rejected connection from", "rank out of range: rank 5 in a job of 2"}},
		{name: "duplicate", peer: func(t *testing.T, tr *Transport) {
			if _, err := rawPeer(t, tr, 1, 0, testSecret); err != nil {
				t.Fatal(err)
			}
			_, err := rawPeer(t, tr, 1, 0, testSecret)
			check(t, "connector", err, errDuplicate)
		}, logs: []string{"rejected connection from", "rank 1 rail 0: duplicate connection"}},
		{name: "garbage", peer: func(t *testing.T, tr *Transport) {
			c, err := net.Dial("tcp", tr.Addrs()[0])
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.Write(bytes.Repeat([]byte("GET / HTTP/1.1\r\n"), 8))
			expectClosed(t, c)
		}, logs: []string{"rejected connection from", "bad magic"}},
		{name: "slowloris", short: true, peer: func(t *testing.T, tr *Transport) {
			c, err := net.Dial("tcp", tr.Addrs()[1])
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.Write([]byte("CTTC")) // a start, then nothing
			expectClosed(t, c)
		}, logs: []string{"rejected connection from", "i/o timeout"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr, _, logs := acceptorUnderTest(t, func(c *Config) {
				if tt.short {
					c.HandshakeTimeout = 200 * time.Millisecond
				}
			})
			tt.peer(t, tr)
			logs.waitLog(t, tt.logs...)
			// A legitimate rank 1 still completes the mesh (the duplicate
			// case already holds rail 0).
			for rail := range 2 {
				if tt.name == "duplicate" && rail == 0 {
					continue
				}
				if _, err := rawPeer(t, tr, 1, rail, testSecret); err != nil {
					t.Fatalf("good peer on rail %d: %v", rail, err)
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), wait)
			defer cancel()
			if err := tr.Connect(ctx, [][]string{tr.Addrs(), tr.Addrs()}); err != nil {
				t.Fatalf("Connect: %v", err)
			}
		})
	}
}

// expectClosed reads c until the peer closes it.
func expectClosed(t *testing.T, c net.Conn) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(wait))
	if _, err := io.Copy(io.Discard, c); err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatalf("connection still open after %v", wait)
		}
	}
}

// TestWrongSecretMesh checks that two real Transports with different secrets
// never connect, and that Connect says why at once.
func TestWrongSecretMesh(t *testing.T) {
	logs := &logBuffer{}
	a, err := Listen(Config{Rank: 0, Size: 2, Secret: testSecret, Handler: newRecorder(), Logger: logs.logger(), ConnectTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := Listen(Config{Rank: 1, Size: 2, Secret: []byte("some other job's secret........."), Handler: newRecorder(), Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	addrs := [][]string{a.Addrs(), b.Addrs()}
	if err := b.Connect(context.Background(), addrs); !errors.Is(err, auth.ErrDenied) {
		t.Fatalf("Connect: %v, want auth.ErrDenied", err)
	}
	logs.waitLog(t, "tcp: rejected connection from 127.0.0.1:", auth.ErrDenied.Error())
	if a.Rails(1) != nil || b.Rails(0) != nil {
		t.Fatal("rails exist between ranks of different jobs")
	}
}
