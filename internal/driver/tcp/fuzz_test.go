package tcp

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/commtune/commtune/internal/driver"
	"github.com/commtune/commtune/internal/fuzzseed"
)

// FuzzFrameDecoder feeds arbitrary byte streams to the frame decoder: it
// must end with io.EOF, a protocol violation or a truncation, never panic,
// never deliver a Packet longer than MaxPacket, and never grow its buffer
// past it.
// The seed corpus is testdata/fuzz/FuzzFrameDecoder (see TestFuzzSeeds).
func FuzzFrameDecoder(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		h := newFuzzHandler()
		d := newDecoder(h, 1, testMaxPacket)
		// The first byte picks how the stream is cut into reads, so the
		// fuzzer also explores frames split at every boundary.
		chunk := len(data) + 1
		if len(data) > 0 {
			chunk = 1 + int(data[0])%32
			data = data[1:]
		}
		src := chunkSource(data, chunk)
		var err error
		for calls := 0; err == nil; calls++ {
			if calls > 2*len(data)+2 {
				t.Fatal("decoder made no progress")
			}
			_, err = d.run(src)
		}
		if err != io.EOF && !errors.Is(err, driver.ErrProtocol) && !errors.Is(err, errTruncated) {
			t.Fatalf("run: unexpected error %v", err)
		}
		if cap(d.body) > testMaxPacket {
			t.Fatalf("packet buffer grew to %d bytes", cap(d.body))
		}
		if h.lastPut[2] != 0 && err == io.EOF {
			t.Fatal("stream ended cleanly inside a Put")
		}
	})
}

// FuzzHandshake plays arbitrary bytes as the peer against either side of the
// handshake. Challenges are fixed so that seeds can hold valid transcripts
// and the fuzzer can reach every check. Success must only ever be reported
// for a peer the checks allow.
// The seed corpus is testdata/fuzz/FuzzHandshake (see TestFuzzSeeds).
func FuzzHandshake(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte, acceptor bool) {
		s := &script{in: bytes.NewReader(data)}
		if acceptor {
			c := hsConfig(0, acceptorChallenge)
			res, err := acceptHandshake(s, &c, 1, func(peer, rail int) error {
				if peer == 2 {
					return errDuplicate
				}
				return nil
			})
			if err == nil && (res.peer != 1 || res.rail != 1 || res.maxPacket < MinMaxPacket || res.maxPacket > MaxMaxPacket) {
				t.Fatalf("accepted %+v", res)
			}
			if sent := s.out.Len(); sent != helloSize && sent != helloSize+1 && sent != helloSize+verdictSize {
				t.Fatalf("acceptor sent %d bytes", sent)
			}
			return
		}
		c := hsConfig(1, connectorChallenge)
		res, err := connectHandshake(s, &c, 0, 1)
		if err == nil && (res.peer != 0 || res.rail != 1 || res.maxPacket < MinMaxPacket || res.maxPacket > MaxMaxPacket) {
			t.Fatalf("connected %+v", res)
		}
	})
}

// seed is one named entry of a seed corpus.
type seed struct {
	name     string
	data     []byte
	acceptor bool
}

func decoderSeeds() []seed {
	return []seed{
		{name: "packets", data: cat(packetFrame(nil), packetFrame([]byte("hello")), packetFrame(make([]byte, 300)))},
		{name: "puts", data: cat(putFrame(1, 0, []byte("abc")), putFrame(1, 97, []byte("xyz")), putFrame(1, 100, nil))},
		{name: "bye", data: cat(packetFrame([]byte("last")), byeFrame[:])},
		{name: "oversize-packet", data: frameHdr(testMaxPacket+13, kindPacket)},
		{name: "put-out-of-bounds", data: putFrame(1, 99, []byte("ab"))},
		{name: "unknown-kind", data: frameHdr(4, 7)},
		{name: "after-bye", data: cat(byeFrame[:], byeFrame[:])},
		{name: "truncated", data: putFrame(1, 0, make([]byte, 40))[:30]},
	}
}

func handshakeSeeds() []seed {
	con := hsConfig(1, connectorChallenge)
	dup := hsConfig(2, connectorChallenge)
	hello01 := hello(0, 1, DefaultMaxPacket, handshakeVersion)
	return []seed{
		{name: "acceptor-valid", acceptor: true, data: answer(con, 0, 1, handshakeVersion, acceptorChallenge)},
		{name: "acceptor-duplicate", acceptor: true, data: answer(dup, 0, 1, handshakeVersion, acceptorChallenge)},
		{name: "acceptor-wrong-rail", acceptor: true, data: answer(con, 0, 0, handshakeVersion, acceptorChallenge)},
		{name: "acceptor-bad-proof", acceptor: true, data: answer(con, 0, 1, handshakeVersion, connectorChallenge)},
		{name: "acceptor-garbage", acceptor: true, data: []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n")},
		{name: "connector-valid", data: cat(hello01, verdictOK(testSecret, 1, 0, 1))},
		{name: "connector-rejected", data: cat(hello01, []byte{statusDenied})},
		{name: "connector-bad-proof", data: cat(hello01, []byte{statusOK}, make([]byte, 32))},
		{name: "connector-wrong-rank", data: hello(2, 1, DefaultMaxPacket, handshakeVersion)},
	}
}

// TestFuzzSeeds keeps testdata/fuzz in step with the seeds above, which
// hold valid transcripts of the current protocol: run with -rewrite-seeds after
// changing the handshake or the frame format.
func TestFuzzSeeds(t *testing.T) {
	// The valid transcripts must get through, or the fuzzer never reaches
	// the code past the checks.
	for _, s := range handshakeSeeds() {
		if s.name != "acceptor-valid" && s.name != "connector-valid" {
			continue
		}
		sc := &script{in: bytes.NewReader(s.data)}
		var err error
		if s.acceptor {
			c := hsConfig(0, acceptorChallenge)
			_, err = acceptHandshake(sc, &c, 1, func(int, int) error { return nil })
		} else {
			c := hsConfig(1, connectorChallenge)
			_, err = connectHandshake(sc, &c, 0, 1)
		}
		if err != nil {
			t.Errorf("seed %s: %v", s.name, err)
		}
	}

	var frames, handshakes []fuzzseed.Seed
	for _, s := range decoderSeeds() {
		frames = append(frames, fuzzseed.Seed{Name: s.name, Values: []any{s.data}})
	}
	for _, s := range handshakeSeeds() {
		handshakes = append(handshakes, fuzzseed.Seed{Name: s.name, Values: []any{s.data, s.acceptor}})
	}
	fuzzseed.Sync(t, "FuzzFrameDecoder", frames)
	fuzzseed.Sync(t, "FuzzHandshake", handshakes)
}
