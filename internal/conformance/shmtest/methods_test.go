package shmtest

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/commtune/commtune"
	"github.com/commtune/commtune/internal/conformance"
	"github.com/commtune/commtune/internal/testenv"
)

// methodSizes straddle the ring's 128 KiB chunks and 2 MiB capacity, pages
// and the pipe's 1 MiB, up to 64 MiB; in a reduced run (the race
// detector's ranks fill and check payloads 20 times slower), up to 2 MiB
// and a bit: the same edges, the same goroutines. The job's argument says
// which: "reduced", or "".
func methodSizes(arg string) []int {
	sizes := []int{1, 2, 7, 4095, 4096, 4097, 128<<10 - 1, 128 << 10, 128<<10 + 1, 1<<20 + 7, 2<<20 - 1, 2<<20 + 1}
	if arg != "reduced" {
		sizes = append(sizes, 5<<20+13, 64<<20+3)
	}
	return sizes
}

// methodsArg is the argument of this run's methods jobs.
func methodsArg() string { return testenv.Pick("", "reduced") }

// methodsExchange sends every size both ways between ranks paired as (0,1),
// (2,3)…, from and into buffers at odd offsets, and checks every byte and
// that nothing outside the receive window was touched.
func methodsExchange(ctx context.Context, c *commtune.Comm, arg string) error {
	sizes := methodSizes(arg)
	peer := c.Rank() ^ 1
	if peer >= c.Size() {
		return nil
	}
	for i, n := range sizes {
		for _, off := range []int{0, 1, 61} {
			out := make([]byte, n+off)
			conformance.FillPayload(out[off:], c.Rank(), peer, i*100+off)
			in := make([]byte, n+off+2)
			st, err := c.Sendrecv(ctx, out[off:], peer, i, in[1+off:1+off+n], peer, i)
			if err != nil {
				return fmt.Errorf("%d bytes at offset %d: %w", n, off, err)
			}
			want := make([]byte, n)
			conformance.FillPayload(want, peer, c.Rank(), i*100+off)
			if st.Count != n || !bytes.Equal(in[1+off:1+off+n], want) || in[0] != 0 || in[len(in)-1] != 0 {
				return fmt.Errorf("%d bytes at offset %d: received %d, intact %v", n, off, st.Count, bytes.Equal(in[1+off:1+off+n], want))
			}
		}
	}
	s := c.Stats()
	fmt.Printf("rank %d: %d sizes both ways: %d rendezvous sends, %d pulled by the receiver, %d eager\n",
		c.Rank(), len(sizes), s.RendezvousSends, s.PullSends, s.EagerCopySends+s.EagerIovecSends)
	return nil
}

// TestShmMethods forces each large-message method, with nothing sent
// eagerly, and moves 1 B … 64 MiB through it byte-exact.
func TestShmMethods(t *testing.T) {
	for _, m := range []string{"copy", "cma", "vmsplice", "cachefree", "auto"} {
		t.Run(m, func(t *testing.T) {
			out, err := conformance.RunJob(2, "methods", methodsArg(), "COMMTUNE_TRANSPORTS=shm,tcp", "COMMTUNE_SHM_METHOD="+m, "COMMTUNE_SHM_EAGER=0")
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			if m == "cma" && strings.Contains(out, " 0 pulled") {
				t.Fatalf("cma forced but nothing was pulled:\n%s", out)
			}
			t.Log(out)
		})
	}
}

// TestNoCMA: with single-copy reads unavailable (simulated by the
// environment switch), a job forcing the cma method still runs — on the
// copy method — and says so once for the node.
func TestNoCMA(t *testing.T) {
	out, err := conformance.RunJob(4, "methods", methodsArg(), "COMMTUNE_TRANSPORTS=shm,tcp", "COMMTUNE_SHM_METHOD=cma",
		"COMMTUNE_SHM_CMA=off", "COMMTUNE_SHM_EAGER=0")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if n := strings.Count(out, "single-copy transfers (CMA, process_vm_readv) are unavailable"); n != 1 {
		t.Fatalf("the unavailability was said %d times, want once:\n%s", n, out)
	}
	if !strings.Contains(out, " 0 pulled") || strings.Contains(out, " 42 pulled") {
		t.Fatalf("something was pulled with CMA off:\n%s", out)
	}
	t.Log(out)
}
