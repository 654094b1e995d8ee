package sched

import (
	"fmt"
	"io"
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
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			defer ln.Close()
			go func() {
				c, err := ln.Accept()
				if err == nil {
					io.Copy(io.Discard, c)
				}
			}()
			c, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
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
