package mpiref

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestFindRefusesUnknown(t *testing.T) {
	if _, err := Find("lam"); err == nil {
		t.Fatal("Find(lam) succeeded")
	}
}

// TestReference builds the C benchmark with every installed MPI and runs a
// short ping-pong and a collective through its launcher, checking that
// each size is reported with a positive time.
func TestReference(t *testing.T) {
	found := 0
	for _, name := range []string{"openmpi", "mpich"} {
		impl, err := Find(name)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		found++
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			bin, err := impl.Build(ctx, t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			pp, err := impl.PingPong(ctx, bin, []int{8, 4096}, 50)
			if err != nil {
				t.Fatal(err)
			}
			for i, r := range pp {
				if r.Bytes != []int{8, 4096}[i] || r.LatencyUS <= 0 {
					t.Errorf("ping-pong result %d: %+v", i, r)
				}
			}
			for _, op := range Ops {
				res, err := impl.Coll(ctx, bin, 3, op, []int{16, 1024}, 20)
				if err != nil {
					t.Fatalf("%s: %v", op, err)
				}
				for _, r := range res {
					if r.TimeUS <= 0 || r.Algo != name {
						t.Errorf("%s: %+v", op, r)
					}
				}
			}
		})
	}
	if found == 0 {
		t.Skip("no MPI installed (openmpi-bin libopenmpi-dev or mpich): nothing to compare against")
	}
}
