package tcp

import (
	"bytes"
	"runtime"
	"testing"

	"github.com/commtune/commtune/internal/driver"
)

// landing is a Handler whose Put regions are one slice it owns; it checks
// that each Put's bytes are in that slice by the time PutDone reports them.
type landing struct {
	*recorder
	mem  []byte
	want []byte
	t    testing.TB
}

func (h *landing) Region(peer int, region uint64, offset int64, n int) ([]byte, error) {
	return h.recorder.Region(peer, region, offset, n)
}

func (h *landing) PutDone(peer int, region uint64, offset int64, n int) {
	got := h.mem[offset : offset+int64(n)]
	if !bytes.Equal(got, h.want[:n]) {
		h.t.Errorf("PutDone: the region's own memory does not hold the payload")
	}
	h.recorder.PutDone(peer, region, offset, n)
}

// TestPutLandsInRegion checks that Put payloads are read into the slice
// Region returns (not delivered from a copy), and that a steady-state 1 MiB
// Put allocates nothing per byte on either side.
func TestPutLandsInRegion(t *testing.T) {
	const size = 1 << 20
	payload := pattern(size, 3)
	var h *landing
	nodes := mesh(t, 2, 1, func(c *Config) {
		if c.Rank == 1 {
			rec := c.Handler.(*recorder)
			h = &landing{recorder: rec, mem: rec.region(8, size+64), want: payload, t: t}
			c.Handler = h
		}
	})
	a := nodes[0]
	r := a.tr.Rails(1)[0]
	f := &driver.Frame{Kind: driver.Put, Region: 8, Offset: 64, Iov: [][]byte{payload}}
	put := func() {
		done, err := r.Post(f)
		if err != nil {
			t.Fatal(err)
		}
		if !done {
			<-a.rec.idles
		}
		<-h.puts
	}
	put()
	if !h.holds(8, 64, payload) {
		t.Fatal("region does not hold the payload")
	}

	// Warm up, then measure: allocations are counted process-wide, so this
	// covers Post, the writer and the peer's reader.
	for range 5 {
		put()
	}
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	allocs := testing.AllocsPerRun(50, put)
	runtime.ReadMemStats(&m1)
	perPut := (m1.TotalAlloc - m0.TotalAlloc) / 51
	t.Logf("steady-state 1 MiB Put: %.1f allocations, %d bytes allocated per Put", allocs, perPut)
	if allocs > 2 {
		t.Errorf("%.1f allocations per 1 MiB Put, want none", allocs)
	}
	if perPut > 4<<10 {
		t.Errorf("%d bytes allocated per 1 MiB Put: an intermediate buffer?", perPut)
	}
}

// TestSmallPostIsInline checks the fast path: a small frame on an idle rail
// leaves in the caller's goroutine (Post returns true, no Idle follows).
func TestSmallPostIsInline(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the inline writev is Linux-only")
	}
	nodes := mesh(t, 2, 1, nil)
	r := nodes[0].tr.Rails(1)[0]
	for i := range 10 {
		done, err := r.Post(&driver.Frame{Kind: driver.Packet, Iov: [][]byte{[]byte("hello"), {byte(i)}}})
		if err != nil || !done {
			t.Fatalf("Post = %v, %v; want true, nil", done, err)
		}
		recv(t, nodes[1].rec.packets, "Packet")
	}
	none(t, nodes[0].rec.idles, "Idle")
	f := &driver.Frame{Kind: driver.Packet, Iov: [][]byte{[]byte("hello")}}
	allocs := testing.AllocsPerRun(100, func() {
		r.Post(f)
		<-nodes[1].rec.packets
	})
	// The recorder copies each body (one allocation); the driver adds none.
	if allocs > 1 {
		t.Errorf("%.1f allocations per small Packet round, want at most the recorder's 1", allocs)
	}
}
