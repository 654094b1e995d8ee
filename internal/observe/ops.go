// Package observe counts and times the library's calls: per communicator
// and operation (and per peer for point-to-point) the calls, bytes, time
// inside the library and the paths taken, read by Comm.Profile; and, under
// COMMTUNE_TRACE, every call as a span of the rank's timeline
// (docs/trace.md). A call costs one check of a flag when both are off.
package observe

import "sync"

// Op names a library call: the name the API gives it and its family.
type Op uint16

// Families of calls (a span's "cat").
const (
	CatP2P      = "p2p"
	CatColl     = "coll"
	CatWait     = "wait"
	CatHalo     = "halo"
	CatRMA      = "rma"
	CatComm     = "comm"
	CatRecovery = "recovery"
)

// maxOps bounds the operations: counters are an array indexed by Op.
const maxOps = 128

// MaxOps bounds the Op values: callers may index arrays by Op.
const MaxOps = maxOps

var (
	opsMu   sync.Mutex
	opNames [maxOps]string
	opCats  [maxOps]string
	opPaths [maxOps]bool // calls name the path they took (collectives, halos)
	opByKey = map[string]Op{}
	numOps  Op
)

// Register returns the Op of name in family cat, registering it the first
// time (at package initialisation: the set is fixed before any call).
func Register(name, cat string) Op {
	opsMu.Lock()
	defer opsMu.Unlock()
	if op, ok := opByKey[name]; ok {
		return op
	}
	if numOps == maxOps {
		panic("observe: too many operations")
	}
	op := numOps
	numOps++
	opNames[op], opCats[op] = name, cat
	opPaths[op] = cat == CatColl || cat == CatHalo
	regionNames[op] = "commtune." + name
	opByKey[name] = op
	return op
}

// Name is the operation's name in the API ("Allreduce").
func (op Op) Name() string { return opNames[op] }

// Cat is the operation's family (CatColl …).
func (op Op) Cat() string { return opCats[op] }
