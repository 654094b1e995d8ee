package tcp

import (
	"fmt"
	"io"
	"net"
	"sync"
	"testing"

	"github.com/commtune/commtune/internal/driver"
)

// benchSizes are the ping-pong message sizes: latency-bound, one reader
// buffer, bandwidth-bound. Up to 64 KiB they travel as Packets, beyond as
// Puts (as the core's rendezvous would send them).
var benchSizes = []int{8, 64 << 10, 4 << 20}

func sizeName(n int) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%dMiB", n>>20)
	case n >= 1<<10:
		return fmt.Sprintf("%dKiB", n>>10)
	}
	return fmt.Sprintf("%dB", n)
}

// pinger is rank 0's Handler: it signals each reply and each Idle.
type pinger struct {
	*recorder
	got  chan struct{}
	idle chan struct{}
}

func (h *pinger) Packet(peer int, body []byte) error { h.got <- struct{}{}; return nil }
func (h *pinger) PutDone(peer int, region uint64, offset int64, n int) {
	h.got <- struct{}{}
}
func (h *pinger) Idle(r driver.Rail, err error) { h.idle <- struct{}{} }

// echoer is rank 1's Handler: it answers each message with one of the same
// size and kind, straight from the reader goroutine, as a core's progress
// would; it defers a reply while the rail is busy (the scheduler's rule).
type echoer struct {
	*recorder
	mu    sync.Mutex
	rail  driver.Rail
	frame driver.Frame
	busy  bool
	owed  bool
	err   error
}

func (h *echoer) Packet(peer int, body []byte) error { h.reply(); return nil }
func (h *echoer) PutDone(peer int, region uint64, offset int64, n int) {
	h.reply()
}

func (h *echoer) reply() {
	h.mu.Lock()
	if h.busy {
		h.owed = true
		h.mu.Unlock()
		return
	}
	h.busy = true
	h.mu.Unlock()
	done, err := h.rail.Post(&h.frame)
	if done || err != nil {
		h.mu.Lock()
		h.busy, h.err = false, err
		owed := h.owed
		h.owed = false
		h.mu.Unlock()
		if owed {
			h.reply()
		}
	}
}

func (h *echoer) Idle(r driver.Rail, err error) {
	h.mu.Lock()
	h.busy = false
	owed := h.owed
	h.owed = false
	h.mu.Unlock()
	if owed {
		h.reply()
	}
}

// BenchmarkPingPong measures a round trip between two Transports over
// loopback: Post, the peer's reader and Handler, its Post back, our reader
// and Handler. Compare with BenchmarkRawTCP in the same run.
func BenchmarkPingPong(b *testing.B) {
	for _, size := range benchSizes {
		b.Run(sizeName(size), func(b *testing.B) {
			kind := driver.Packet
			if size > 64<<10 {
				kind = driver.Put
			}
			var ping *pinger
			var echo *echoer
			nodes := mesh(b, 2, 1, func(c *Config) {
				rec := c.Handler.(*recorder)
				rec.region(1, size)
				if c.Rank == 0 {
					ping = &pinger{recorder: rec, got: make(chan struct{}, 1), idle: make(chan struct{}, 1)}
					c.Handler = ping
				} else {
					echo = &echoer{recorder: rec, frame: driver.Frame{Kind: kind, Region: 1, Iov: [][]byte{make([]byte, size)}}}
					c.Handler = echo
				}
			})
			echo.mu.Lock()
			echo.rail = nodes[1].tr.Rails(0)[0]
			echo.mu.Unlock()
			r := nodes[0].tr.Rails(1)[0]
			f := &driver.Frame{Kind: kind, Region: 1, Iov: [][]byte{make([]byte, size)}}
			b.SetBytes(2 * int64(size))
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				done, err := r.Post(f)
				if err != nil {
					b.Fatal(err)
				}
				<-ping.got
				if !done {
					<-ping.idle
				}
			}
			b.StopTimer()
			echo.mu.Lock()
			err := echo.err
			echo.mu.Unlock()
			if err != nil {
				b.Fatal(err)
			}
		})
	}
}

// BenchmarkRawTCP is the baseline: the same ping-pong with a plain net.Conn
// write and io.ReadFull on each side, no framing, no Handler.
func BenchmarkRawTCP(b *testing.B) { benchRaw(b, false) }

// BenchmarkRawTCPReader is BenchmarkRawTCP with the pinging side's reads
// moved to a reader goroutine that signals a channel, as a Transport's reader
// signals a waiting application goroutine: it separates the cost of that
// extra wake-up (paid by any event-driven design) from the driver's own.
func BenchmarkRawTCPReader(b *testing.B) { benchRaw(b, true) }

func benchRaw(b *testing.B, readerGoroutine bool) {
	for _, size := range benchSizes {
		b.Run(sizeName(size), func(b *testing.B) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			defer ln.Close()
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				c, err := ln.Accept()
				if err != nil {
					return
				}
				defer c.Close()
				buf := make([]byte, size)
				for {
					if _, err := io.ReadFull(c, buf); err != nil {
						return
					}
					if _, err := c.Write(buf); err != nil {
						return
					}
				}
			}()
			c, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				b.Fatal(err)
			}
			buf := make([]byte, size)
			got := make(chan struct{}, 1)
			if readerGoroutine {
				wg.Add(1)
				go func() {
					defer wg.Done()
					in := make([]byte, size)
					for {
						if _, err := io.ReadFull(c, in); err != nil {
							return
						}
						got <- struct{}{}
					}
				}()
			}
			b.SetBytes(2 * int64(size))
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if _, err := c.Write(buf); err != nil {
					b.Fatal(err)
				}
				if readerGoroutine {
					<-got
				} else if _, err := io.ReadFull(c, buf); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			c.Close()
			wg.Wait()
		})
	}
}
