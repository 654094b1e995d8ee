package commtune

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"unsafe"

	"github.com/commtune/commtune/internal/noderegion"
)

// SplitShared returns the communicator of c's ranks that can share memory
// with this one (MPI's Comm_split_type SHARED): the ranks of this process
// under Local, else the ranks on this node, whatever transport connects
// them. Every rank of c must call it. Its ranks keep c's order.
func (c *Comm) SplitShared(ctx context.Context) (*Comm, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	return c.Split(ctx, c.in.Endpoint().NodeLeader(), c.Rank())
}

// SharedRegion is memory each rank of a communicator allocated a part of,
// every part mapped in every rank: a rank reads and writes its peers'
// parts directly, with no copy through the library.
//
// Ordering: a write is seen by another rank's read once both are ordered
// by a synchronisation of the communicator — a Barrier (or any collective
// that waits for the writer) after the write on the writer and before the
// read on the reader. Without one, a reader may see a write partly or
// late. Writes of different ranks to the same bytes race, as between
// goroutines.
type SharedRegion struct {
	comm  *Comm
	parts [][]byte
	once  sync.Once
}

// regionPart is what each rank tells the others of its part.
type regionPart struct {
	Path string
	Size int
	Err  string
}

// AllocShared allocates size bytes (zeroed) for this rank in a region
// shared by every rank of c, which must all run on this node (a
// communicator from SplitShared); every rank calls it, and sizes may
// differ. If any rank fails, every rank gets the error.
func (c *Comm) AllocShared(ctx context.Context, size int) (*SharedRegion, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	if size < 0 {
		return nil, fmt.Errorf("commtune: AllocShared: size %d", size)
	}
	ep := c.in.Endpoint()
	var mine regionPart
	var mem []byte
	for r := 0; r < c.Size() && mine.Err == ""; r++ {
		if !ep.SameNode(c.WorldRank(r)) {
			mine.Err = fmt.Sprintf("rank %d of the communicator runs on another node (use SplitShared)", r)
		}
	}
	if mine.Err == "" && size > 0 {
		path, m, err := noderegion.Create(noderegion.Dir(), size)
		if err != nil {
			mine.Err = err.Error()
		}
		mine.Path, mine.Size, mem = path, size, m
	}
	all, err := allgatherValues(quietly(ctx), c, mine)
	if err != nil {
		noderegion.Unmap(mem)
		os.Remove(mine.Path)
		return nil, err
	}
	reg := &SharedRegion{comm: c, parts: make([][]byte, c.Size())}
	reg.parts[c.Rank()] = mem
	var errs []error
	for r, p := range all {
		switch {
		case p.Err != "":
			errs = append(errs, fmt.Errorf("rank %d: %s", r, p.Err))
		case r != c.Rank() && p.Size > 0:
			m, err := noderegion.Map(p.Path, p.Size)
			if err != nil {
				errs = append(errs, err)
			}
			reg.parts[r] = m
		}
	}
	// Every rank has mapped what it could: the files can go. Then agree.
	ok := []int32{1}
	if len(errs) > 0 {
		ok[0] = 0
	}
	if err := runNow(ctx)(allreduceCall[int32](quietly(ctx), c, ok, ok, Min, nil)); err != nil {
		errs = append(errs, err)
	}
	if mine.Path != "" {
		os.Remove(mine.Path)
	}
	if len(errs) > 0 || ok[0] == 0 {
		reg.Close()
		if len(errs) == 0 {
			errs = append(errs, errors.New("another rank could not map the region"))
		}
		return nil, fmt.Errorf("commtune: AllocShared: %w", errors.Join(errs...))
	}
	return reg, nil
}

// Part returns rank's part of the region (nil for a part of 0 bytes).
func (r *SharedRegion) Part(rank int) []byte {
	if rank < 0 || rank >= len(r.parts) {
		return nil
	}
	return r.parts[rank]
}

// Comm returns the communicator the region was allocated on.
func (r *SharedRegion) Comm() *Comm { return r.comm }

// Close unmaps the region in this rank: its parts' slices must not be used
// afterwards (they fault). The other ranks' mappings stay until their own
// Close.
func (r *SharedRegion) Close() error {
	var errs []error
	r.once.Do(func() {
		for i, p := range r.parts {
			if err := noderegion.Unmap(p); err != nil {
				errs = append(errs, err)
			}
			r.parts[i] = nil
		}
	})
	return errors.Join(errs...)
}

// SharedPart views rank's part of r as elements of T (its length in whole
// elements; a part is page-aligned).
func SharedPart[T Number](r *SharedRegion, rank int) []T {
	b := r.Part(rank)
	es := elemSize[T]()
	if len(b) < es {
		return nil
	}
	return unsafe.Slice((*T)(unsafe.Pointer(&b[0])), len(b)/es)
}
