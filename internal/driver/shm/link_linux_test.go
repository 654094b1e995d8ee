package shm

import (
	"fmt"
	"slices"
	"testing"
	"time"
	"unsafe"

	"github.com/commtune/commtune/internal/driver"
	"golang.org/x/sys/unix"
)

// TestRingsLinkOnFirstUse checks that a ring gets memory, and its owner
// polls it, only once its sender writes to it: a job whose ranks talk to
// some peers never pays for the other pairs.
func TestRingsLinkOnFirstUse(t *testing.T) {
	cases := []struct {
		name  string
		sends [][2]int // from, to
	}{
		{"nobody talks", nil},
		{"one way", [][2]int{{0, 1}}},
		{"a ring of neighbours", [][2]int{{0, 1}, {1, 2}, {2, 3}, {3, 0}}},
		{"everyone to rank 0", [][2]int{{1, 0}, {2, 0}, {3, 0}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ts, hs := group(t, 4, nil)
			// Page residency says what memory a ring has on tmpfs, not on a
			// disk file system's page cache.
			var fs unix.Statfs_t
			onTmpfs := unix.Statfs(ts[0].cfg.Dir, &fs) == nil && fs.Type == unix.TMPFS_MAGIC
			for k, s := range tc.sends {
				msg := []byte(fmt.Sprint("hello ", k))
				if done, err := ts[s[0]].Rails(s[1])[0].Post(&driver.Frame{Kind: driver.Packet, Iov: [][]byte{msg}}); !done || err != nil {
					t.Fatalf("post %v: %v %v", s, done, err)
				}
				<-hs[s[1]].pkt
			}
			for to, tr := range ts {
				var want []int
				for _, s := range tc.sends {
					if s[1] == to {
						want = append(want, s[0])
					}
				}
				var got []int
				for _, ir := range tr.rings {
					linked := tr.in.linkState(ir.index)&linkReady != 0
					if linked {
						got = append(got, ir.peer)
					}
					_, data := tr.in.ringBlock(ir.index)
					res := resident(t, data)
					if onTmpfs && !linked && res > 0 {
						t.Errorf("rank %d: %d pages of rank %d's unused ring are in memory", to, res, ir.peer)
					}
					if onTmpfs && linked && res > populateStep/pageSize {
						t.Errorf("rank %d: %d pages of rank %d's ring are in memory after one small message, want at most the first step (%d)", to, res, ir.peer, populateStep/pageSize)
					}
				}
				slices.Sort(got)
				slices.Sort(want)
				if !slices.Equal(got, want) {
					t.Errorf("rank %d: rings linked by %v, want %v", to, got, want)
				}
				if m, w := tr.SharedMemory(), int64(headerPages+len(want)*(pageSize+min(populateStep, tr.in.capacity))); m != w {
					t.Errorf("rank %d: SharedMemory %d, want %d", to, m, w)
				}
				if n := len(*tr.live.Load()); n != len(want) {
					t.Errorf("rank %d: polls %d rings, want %d", to, n, len(want))
				}
			}
		})
	}
}

// resident counts the pages of mem that are in memory.
func resident(t *testing.T, mem []byte) int {
	t.Helper()
	vec := make([]byte, (len(mem)+pageSize-1)/pageSize)
	if _, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&mem[0])), uintptr(len(mem)), uintptr(unsafe.Pointer(&vec[0]))); errno != 0 {
		t.Fatal(errno)
	}
	n := 0
	for _, v := range vec {
		n += int(v & 1)
	}
	return n
}

// TestByeWithoutLink closes a rank that never sent anything to its
// peers: each must learn it closed (as from a Bye record) without a ring
// getting memory for the goodbye. Here all ranks share one process, so no
// process exit tells them.
func TestByeWithoutLink(t *testing.T) {
	ts, hs := group(t, 3, nil)
	// Rank 0 writes to rank 2: the goodbye must not depend on the other
	// direction.
	if done, err := ts[0].Rails(2)[0].Post(&driver.Frame{Kind: driver.Packet, Iov: [][]byte{[]byte("hi")}}); !done || err != nil {
		t.Fatal(done, err)
	}
	<-hs[2].pkt
	ts[2].Close()
	for _, r := range []int{0, 1} {
		heardClose(t, hs[r], r, 2)
		if idx := ts[r].in.ringFor(2); ts[r].in.linkState(idx)&linkReady != 0 {
			t.Errorf("rank %d: rank 2's ring was linked to say goodbye", r)
		}
	}
}

// TestBudgetBoundsMemory has every rank send messages of 4 KiB and more
// (which give a ring all its memory) to every other: each rank's inbound
// rings must then hold its budget plus what each ring's records force,
// not a whole ring per peer, and every message must arrive intact.
func TestBudgetBoundsMemory(t *testing.T) {
	const n, budget, size, count = 6, 64 << 10, 6 << 10, 8
	ts, hs := group(t, n, func(c *Config) { c.RingSize, c.ChunkSize, c.Budget = 1<<20, 64<<10, budget })
	for from := range ts {
		for to := range ts {
			for k := 0; from != to && k < count; k++ {
				msg := fill(size, from*n+to+k)
				f := &driver.Frame{Kind: driver.Packet, Iov: [][]byte{msg}}
				done, err := ts[from].Rails(to)[0].Post(f)
				if err == nil && !done { // the rest goes on in the background
					select {
					case err = <-hs[from].idle:
					case <-time.After(10 * time.Second):
						t.Fatalf("%d → %d: message %d not sent", from, to, k)
					}
				}
				if err != nil {
					t.Fatalf("%d → %d: %v", from, to, err)
				}
			}
		}
	}
	// A record of 6 KiB forces at most room for two (ring.reserveFor).
	forced := int64(align(2*align(size+recHeader, recAlign)+recHeader, populateStep))
	bound := int64(pageSize+(n-1)*pageSize+budget) + int64(n-1)*forced
	for to, tr := range ts {
		for range (n - 1) * count {
			select {
			case <-hs[to].pkt:
			case <-time.After(10 * time.Second):
				t.Fatalf("rank %d: messages missing", to)
			}
		}
		hs[to].mu.Lock()
		for i, p := range hs[to].packets {
			if len(p) != size {
				t.Errorf("rank %d: packet %d has %d bytes, want %d", to, i, len(p), size)
			}
		}
		hs[to].mu.Unlock()
		if m := tr.SharedMemory(); m > bound {
			t.Errorf("rank %d holds %d bytes of shared memory, want at most %d (budget %d)", to, m, bound, budget)
		}
	}
}
