package tcp

import (
	"net"
	"time"
)

// keepAlive makes a peer whose host vanished (no FIN, no RST) noticed within
// about Idle + Interval×Count = 10 s of silence, instead of the two hours of
// the system default. It does not cover data stuck unacknowledged in flight
// (retransmissions time out on their own schedule); TCP_USER_TIMEOUT would,
// but it would also drop a peer that merely stops reading for that long.
var keepAlive = net.KeepAliveConfig{
	Enable:   true,
	Idle:     5 * time.Second,
	Interval: 1 * time.Second,
	Count:    5,
}

// multirailSendBuffer is SO_SNDBUF on the connections of a transport with
// several rails (the kernel doubles it). A frame is reported done once
// the kernel has taken it; with the autotuned buffer (up to 4 MiB here) a
// whole split chunk is "done" at once, and neither its time nor the
// rail's release says anything about the link — a split cannot see a
// rail slow down. 256 KiB keeps that gap to a few ms at 400 Mbit and
// covers the bandwidth-delay product of a cluster link (10 Gbit/s × 100 µs
// is 125 KB).
const multirailSendBuffer = 256 << 10

// configure sets the socket options every rail connection uses; sendBuffer
// > 0 fixes SO_SNDBUF.
func configure(nc *net.TCPConn, sendBuffer int) error {
	// A frame goes out as soon as it is written: the scheduler aggregates,
	// Nagle must not delay on top of it.
	if err := nc.SetNoDelay(true); err != nil {
		return err
	}
	// With one rail, SO_SNDBUF/SO_RCVBUF stay with the kernel's
	// autotuning: fixing them at 4 MiB (this machine's wmem_max/rmem_max)
	// measured no better on 4 MiB loopback ping-pong (median 3.2 ms against
	// 3.0 ms, five runs each) and would disable autotuning on real links.
	if sendBuffer > 0 {
		if err := nc.SetWriteBuffer(sendBuffer); err != nil {
			return err
		}
	}
	return nc.SetKeepAliveConfig(keepAlive)
}
