package shm

import (
	"runtime"
	"testing"
)

// BenchmarkRingPingPong is the floor under the shm eager path: two threads
// bounce an 8-byte record through two rings, polling, with nothing of
// commtune's matching or scheduling. ns/op is one round trip.
func BenchmarkRingPingPong(b *testing.B) {
	if runtime.GOMAXPROCS(0) < 2 {
		b.Skip("needs two processors")
	}
	seg := testSegment(&testing.T{}, []int{1, 2}, 64<<10)
	h0, d0 := seg.ringBlock(0)
	h1, d1 := seg.ringBlock(1)
	ping, pong := newRing(h0, d0), newRing(h1, d1)
	pingIn, pongIn := newRing(h0, d0), newRing(h1, d1)
	send := func(r *ring) {
		for {
			if w := r.reserve(recHeader + 8); w != nil {
				le.PutUint32(w, recHeader+8)
				w[4] = kindPacket
				r.commit(recHeader + 8)
				return
			}
		}
	}
	recv := func(r *ring) {
		for {
			if rec, _ := r.peek(); rec != nil {
				r.release(rec)
				return
			}
		}
	}
	done := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		for i := 0; i < b.N; i++ {
			recv(pingIn)
			send(pong)
		}
		close(done)
	}()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		send(ping)
		recv(pongIn)
	}
	<-done
}
