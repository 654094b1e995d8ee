package tcp

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/commtune/commtune/internal/driver"
)

// Defaults for the zero values of Config's fields.
const (
	// DefaultListenAddr is the single rail used when Config.ListenAddrs is
	// empty: loopback, any free port.
	DefaultListenAddr = "127.0.0.1:0"
	// DefaultMaxPacket is the largest Packet body accepted when
	// Config.MaxPacket is zero. Packets carry headers and eager payloads;
	// larger data travels as Put frames, which have no such limit. 1 MiB is
	// also the most a connection's reader keeps allocated for Packet bodies.
	DefaultMaxPacket = 1 << 20
	// DefaultConnectTimeout bounds Connect when Config.ConnectTimeout is zero.
	DefaultConnectTimeout = 30 * time.Second
	// DefaultHandshakeTimeout bounds one connection's handshake when
	// Config.HandshakeTimeout is zero. It is what a peer that connects and
	// then says nothing (slowloris) can cost us.
	DefaultHandshakeTimeout = 10 * time.Second
	// DefaultCloseTimeout bounds how long Close waits for each peer to
	// acknowledge the Bye by closing its side when Config.CloseTimeout is zero.
	DefaultCloseTimeout = 2 * time.Second
)

// Limits on Config values.
const (
	// MinMaxPacket is the smallest MaxPacket accepted, here and from a peer
	// during the handshake: the core's headers must always fit.
	MinMaxPacket = 1 << 10
	// MaxMaxPacket is the largest MaxPacket accepted: 1 GiB, well inside what
	// the u32 length prefix can express and an int can hold on 32-bit
	// platforms. Bulk data belongs in Put frames anyway.
	MaxMaxPacket = 1 << 30
	// MinSecretSize is the shortest job secret accepted, as auth.DecodeSecret.
	MinSecretSize = 16
)

// Config describes one rank's end of the TCP mesh. The zero value of every
// field except Size, Secret and Handler has a documented default.
type Config struct {
	// Rank is this process's world rank, in [0, Size).
	Rank int
	// Size is the number of ranks in the job; at least 1.
	Size int
	// Secret is the job secret (at least MinSecretSize bytes) that both ends
	// of every connection prove they hold; it never crosses the wire.
	Secret []byte
	// Handler receives packets, puts, idle events and lost peers. Required.
	Handler driver.Handler
	// ListenAddrs holds one local address per rail ("10.0.1.5:0"); the
	// number of rails is its length and must be the same on every rank.
	// Default: {DefaultListenAddr}, one loopback rail.
	ListenAddrs []string
	// MaxPacket is the largest Packet body this rank accepts; a peer that
	// sends more breaks the protocol. A rail's Caps.MaxPacket is the smaller
	// of the two ends' values. Default DefaultMaxPacket (1 MiB); allowed
	// range [MinMaxPacket, MaxMaxPacket].
	MaxPacket int
	// ConnectTimeout bounds Connect; when it expires Connect fails with an
	// error naming the ranks still missing. Default DefaultConnectTimeout.
	ConnectTimeout time.Duration
	// HandshakeTimeout bounds each connection's authentication. Default
	// DefaultHandshakeTimeout.
	HandshakeTimeout time.Duration
	// CloseTimeout bounds how long Close waits for peers to acknowledge its
	// Bye before it closes the connections anyway. Default
	// DefaultCloseTimeout.
	CloseTimeout time.Duration
	// Logger receives rejected connections and protocol violations (Warn)
	// and connection life-cycle events (Debug). Default slog.Default().
	Logger *slog.Logger
}

// errConfig marks an invalid Config.
var errConfig = errors.New("tcp: invalid config")

// withDefaults returns c with defaults filled in, or an error naming the
// first invalid field.
func (c Config) withDefaults() (Config, error) {
	bad := func(format string, args ...any) (Config, error) {
		return Config{}, fmt.Errorf("%w: %s", errConfig, fmt.Sprintf(format, args...))
	}
	if c.Size < 1 {
		return bad("Size is %d, want at least 1", c.Size)
	}
	if c.Rank < 0 || c.Rank >= c.Size {
		return bad("Rank %d outside [0, %d)", c.Rank, c.Size)
	}
	if len(c.Secret) < MinSecretSize {
		return bad("Secret is %d bytes, want at least %d", len(c.Secret), MinSecretSize)
	}
	if c.Handler == nil {
		return bad("Handler is nil")
	}
	// Copy what the caller could change under us.
	c.Secret = append([]byte(nil), c.Secret...)
	if len(c.ListenAddrs) == 0 {
		c.ListenAddrs = []string{DefaultListenAddr}
	} else {
		c.ListenAddrs = append([]string(nil), c.ListenAddrs...)
	}
	if c.MaxPacket == 0 {
		c.MaxPacket = DefaultMaxPacket
	}
	if c.MaxPacket < MinMaxPacket || c.MaxPacket > MaxMaxPacket {
		return bad("MaxPacket is %d, want [%d, %d]", c.MaxPacket, MinMaxPacket, MaxMaxPacket)
	}
	if c.ConnectTimeout < 0 || c.HandshakeTimeout < 0 || c.CloseTimeout < 0 {
		return bad("negative timeout")
	}
	if c.ConnectTimeout == 0 {
		c.ConnectTimeout = DefaultConnectTimeout
	}
	if c.HandshakeTimeout == 0 {
		c.HandshakeTimeout = DefaultHandshakeTimeout
	}
	if c.CloseTimeout == 0 {
		c.CloseTimeout = DefaultCloseTimeout
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c, nil
}
