package sched

import (
	"fmt"
	"net"
	"runtime"
	"testing"
)

// BenchmarkHandoff is what multicore posting (seed 002 §III-D) would pay
// per chunk: handing a post to a goroutine parked on another processor
// and learning that it is done. The seed measured 3–6 µs for its threads;
// a split pays for it only if posting the chunk in the caller takes
// longer (a TCP post copies up to the socket buffer into the kernel).
func BenchmarkHandoff(b *testing.B) {
	if runtime.GOMAXPROCS(0) < 2 {
		b.Skip("needs two processors")
	}
	work := make(chan int)
	done := make(chan int)
	go func() {
		for n := range work {
			done <- n
		}
	}()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		work <- i
		<-done
	}
	b.StopTimer()
	close(work)
}

// BenchmarkPostCopy is the other side of the trade: the time a TCP post
// of one chunk spends in the caller copying it into the kernel's send
// buffer (a socket the peer drains at once), per chunk size.
func BenchmarkPostCopy(b *testing.B) {
	for _, size := range []int{32 << 10, 256 << 10, 1 << 20} {
		b.Run(fmt.Sprintf("%dK", size>>10), func(b *testing.B) {
			c := drainedConn(b, 0)
			buf := make([]byte, size)
			b.SetBytes(int64(size))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := c.Write(buf); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkOffload is where Split.Offload pays: two chunks of one split
// message written to two loopback connections, "serial" from the calling
// goroutine one after the other (what Split does without Offload), and
// "offload" one from the caller while a goroutine parked on a channel,
// as a tcp rail's writer is, writes the other (Frame.Offload). Both
// connections have the send buffer of a multirail tcp transport (256 KiB)
// and a reader that drains them at once.
func BenchmarkOffload(b *testing.B) {
	if runtime.GOMAXPROCS(0) < 2 {
		b.Skip("needs two processors")
	}
	const sendBuffer = 256 << 10 // tcp's multirailSendBuffer
	for _, size := range []int{64 << 10, 256 << 10, 1 << 20} {
		buf := make([]byte, size)
		b.Run(fmt.Sprintf("%dK/serial", size>>10), func(b *testing.B) {
			c0, c1 := drainedConn(b, sendBuffer), drainedConn(b, sendBuffer)
			b.SetBytes(int64(2 * size))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := c0.Write(buf); err != nil {
					b.Fatal(err)
				}
				if _, err := c1.Write(buf); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("%dK/offload", size>>10), func(b *testing.B) {
			c0, c1 := drainedConn(b, sendBuffer), drainedConn(b, sendBuffer)
			work := make(chan struct{})
			done := make(chan error, 1) // the writer never blocks on a failed iteration
			go func() {
				for range work {
					_, err := c1.Write(buf)
					done <- err
				}
			}()
			defer close(work)
			b.SetBytes(int64(2 * size))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				work <- struct{}{} // the first chunk: to the parked writer
				if _, err := c0.Write(buf); err != nil {
					b.Fatal(err)
				}
				if err := <-done; err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// drainedConn returns a loopback TCP connection whose peer reads and
// discards everything at once; sendBuffer > 0 fixes its SO_SNDBUF. The
// peer reads 256 KiB at a time (io.Discard would take 8 KiB a call), so
// that on loopback, where the receiving copy shares the processors, it
// costs as few system calls as a tcp rail's reader.
func drainedConn(b *testing.B, sendBuffer int) *net.TCPConn {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	c := nc.(*net.TCPConn)
	b.Cleanup(func() { c.Close() })
	// Accepted before the listener closes: closing it would reset a
	// connection still in its backlog.
	peer, err := ln.Accept()
	if err != nil {
		b.Fatal(err)
	}
	go func() {
		defer peer.Close()
		buf := make([]byte, 256<<10)
		for {
			if _, err := peer.Read(buf); err != nil {
				return
			}
		}
	}()
	if sendBuffer > 0 {
		if err := c.SetWriteBuffer(sendBuffer); err != nil {
			b.Fatal(err)
		}
	}
	return c
}
