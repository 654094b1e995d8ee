package shm

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/commtune/commtune/internal/driver"
	"github.com/commtune/commtune/internal/testenv"
)

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(100 * time.Microsecond)
	}
}

func TestPacketsByConsumerAndByPoller(t *testing.T) {
	a, b, _, hb := pair(t, nil)
	ra := a.Rails(1)[0]
	if len(b.Rails(0)) != 1 || ra.Caps().Transport != "shm" || !ra.Caps().Local {
		t.Fatalf("rails %+v", ra.Caps())
	}
	// Nobody polls: the consumer goroutine, woken by the bell, delivers.
	for i := 0; i < 100; i++ {
		if done, err := ra.Post(&driver.Frame{Kind: driver.Packet, Iov: [][]byte{[]byte("msg"), {byte(i)}}}); !done || err != nil {
			t.Fatalf("post %d: %v %v", i, done, err)
		}
		<-hb.pkt
	}
	// A poller on b: records come through Poll while the consumer stays
	// asleep. Wait until it sleeps: a drain it began before StartPolling
	// would deliver the record itself (under load, it did).
	waitFor(t, "b's consumer to sleep", func() bool { return b.in.word32(offSleepers).Load() > 0 })
	rb := b.Rails(0)[0].(driver.Poller)
	rb.StartPolling()
	ra.Post(&driver.Frame{Kind: driver.Packet, Iov: [][]byte{[]byte("polled")}})
	waitFor(t, "a polled packet", rb.Poll)
	rb.StopPolling(false)
	hb.mu.Lock()
	last := hb.packets[len(hb.packets)-1]
	hb.mu.Unlock()
	if len(hb.packets) != 101 || string(last) != "polled" {
		t.Fatalf("%d packets, last %q", len(hb.packets), last)
	}
	// Files are gone once both sides connected; the mappings live on.
	names, _ := filepath.Glob(filepath.Join(a.cfg.Dir, "commtune-*"))
	if len(names) != 0 {
		t.Fatalf("files left: %v", names)
	}
}

func TestRemoveJobFiles(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"commtune-j1-0", "commtune-j1-1-0.pipe", "commtune-j2-0", "other"} {
		os.WriteFile(filepath.Join(dir, n), nil, 0o600)
	}
	if err := RemoveJobFiles(dir, "j1"); err != nil {
		t.Fatal(err)
	}
	names, _ := filepath.Glob(filepath.Join(dir, "*"))
	if len(names) != 2 {
		t.Fatalf("left %v", names)
	}
}

// TestPutMethods moves Puts of sizes that straddle chunk, ring and page
// boundaries, at unaligned offsets, by every method; each must land
// byte-exact.
func TestPutMethods(t *testing.T) {
	sizes := []int{1, 7, 4095, 4096, 4097, 8<<10 - 1, 8 << 10, 8<<10 + 1, 64<<10 + 3, 1<<20 + 5}
	if !testenv.Reduced() { // the same paths as 1 MiB, 20 times slower under the detector
		sizes = append(sizes, 64<<20+3)
	}
	for _, mode := range []struct {
		name  string
		queue QueueMode
	}{{"rings", QueueOff}, {"queue", QueueOn}} { // on the queue, the pair's ring comes mid-stream
		for _, m := range methods {
			t.Run(mode.name+"/"+m.String(), func(t *testing.T) {
				a, _, ha, hb := pair(t, func(c *Config) { c.Queue = mode.queue })
				ra := a.Rails(1)[0]
				for i, n := range sizes {
					offs := []int{0, 3, 61}
					if n > 1<<20+5 {
						offs = []int{61} // one unaligned pass of the largest size is enough
					}
					for _, off := range offs {
						src := make([]byte, n+off)
						for j := range src {
							src[j] = byte(j*13 + i)
						}
						region := uint64(100*i + off + 1)
						dst := make([]byte, n+off+2)
						hb.mu.Lock()
						hb.regions[region] = dst[1:]
						hb.mu.Unlock()
						f := &driver.Frame{Kind: driver.Put, Method: m, Region: region, Offset: int64(off), Iov: [][]byte{src[off:]}}
						done, err := ra.Post(f)
						if err != nil {
							t.Fatal(err)
						}
						if !done {
							ra.(driver.Flusher).Flush() // the sender streams the rest itself
							if err := <-ha.idle; err != nil {
								t.Fatal(err)
							}
						}
						waitFor(t, "the put", func() bool { return hb.landed(region) == n })
						if !bytes.Equal(dst[1+off:1+off+n], src[off:]) || dst[0] != 0 || dst[len(dst)-1] != 0 {
							t.Fatalf("%v: %d bytes at offset %d differ", m, n, off)
						}
					}
				}
			})
		}
	}
}

func TestPull(t *testing.T) {
	a, _, _, _ := pair(t, nil)
	ra := a.Rails(1)[0]
	if !ra.Caps().SingleCopy {
		t.Skip("process_vm_readv is not allowed here")
	}
	src := bytes.Repeat([]byte("pull me "), 1<<17)
	dst := make([]byte, len(src))
	if err := ra.(driver.Puller).Pull(dst, uint64(uintptrOf(src))); err != nil || !bytes.Equal(dst, src) {
		t.Fatalf("pull: %v", err)
	}
}

func TestNoCMA(t *testing.T) {
	a, _, _, _ := pair(t, func(c *Config) { c.NoCMA = true })
	if a.Rails(1)[0].Caps().SingleCopy {
		t.Fatal("single copy offered with CMA off")
	}
}
