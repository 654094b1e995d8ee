package boot

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strconv"

	"github.com/commtune/commtune/internal/auth"
)

// Sources a Job can come from (Job.Source).
const (
	SourceCommtune  = "commtune"
	SourceSingleton = "singleton"
)

// Job is what a rank learns about the job it belongs to.
type Job struct {
	Rank, Size, LocalRank, LocalSize int

	ID     string // job id (ValidJobID)
	Secret []byte // per-job secret (authenticates tcp connections)
	Node   string // node identity (hostname) of this rank
	KV     KV     // address exchange; nil for a singleton
	Source string // SourceCommtune, SourcePMI, SourcePMIx or SourceSingleton
	// Protocol names the wire the job was found over ("commtune kvs",
	// "PMI-1", "PMI-2", "PMIx v41", "PMIx v4", "PMIx v3"; "" for a
	// singleton).
	Protocol string
	// Server is the host:port of the key-value or PMI server this rank
	// talks to over the network ("" when it is reached otherwise: PMI_FD):
	// the interface that reaches it also reaches the other nodes.
	Server string
	// Iface is the network interface the launcher was told to use (Hydra's
	// -iface), or "".
	Iface string
	// KeepGoing says the job survives the loss of a rank
	// (COMMTUNE_KEEP_GOING=1): its launcher does not end it then.
	KeepGoing bool
}

// KV is the job-wide key-value store the ranks exchange addresses through.
// Its methods are safe for concurrent use.
type KV interface {
	// Put stores value under key for every rank to Get. Putting the value a
	// key already holds is a no-op; a different value is ErrConflict.
	Put(ctx context.Context, key, value string) error
	// Get returns key's value, waiting until some rank has put it (or ctx
	// ends).
	Get(ctx context.Context, key string) (string, error)
	// Fence is a barrier over all ranks: puts before it are visible to gets
	// after it on every rank.
	Fence(ctx context.Context) error
	// Close says goodbye to the launcher and releases the connection. A rank
	// must call it before exiting: the launcher treats a rank that vanishes
	// without it as failed (like MPICH's "exited without calling finalize").
	Close() error
}

// ManyGetter is implemented by a KV that fetches many keys in one round
// trip (the launcher's own KVS client, the PMIx client).
type ManyGetter interface {
	GetMany(ctx context.Context, keys []string) ([]string, error)
}

// GetAll returns the values of keys, in order: in a round trip per batch
// where kv is a ManyGetter, else one Get each (PMI has no batched get).
func GetAll(ctx context.Context, kv KV, keys []string) ([]string, error) {
	if m, ok := kv.(ManyGetter); ok {
		return m.GetMany(ctx, keys)
	}
	out := make([]string, len(keys))
	for i, k := range keys {
		v, err := kv.Get(ctx, k)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

// LossWatcher is implemented by a KV whose launcher reports lost ranks
// (the commtune launcher's KVS, docs/kvs.md): a rank of a keep-going job
// hands each report to its engine as a lost peer. lost is called for each
// rank reported lost, those before the call included.
type LossWatcher interface {
	WatchLosses(ctx context.Context, lost func(rank int)) error
}

// Aborter is implemented by a KV that can ask the launcher to end the whole
// job (MPI_Abort): the launcher stops every rank and exits with code.
type Aborter interface {
	Abort(ctx context.Context, code int, message string) error
}

// Close closes j's KV, if any.
func (j *Job) Close() error {
	if j.KV == nil {
		return nil
	}
	return j.KV.Close()
}

// detector recognises one way a job can be started. detect returns ok=false
// when its environment is absent, so that the next detector is tried.
type detector struct {
	name   string
	detect func(ctx context.Context, lookup func(string) (string, bool)) (j *Job, ok bool, err error)
}

// detectors is the order Discover tries sources in; the first that
// recognises its environment wins: the commtune launcher's variables, a
// PMI launcher (PMI_FD, or PMI_PORT and PMI_ID: Hydra, Slurm's
// --mpi=pmi2), a PMIx server (PMIX_NAMESPACE and PMIX_RANK: Open MPI's
// mpirun, PRRTE, Slurm's --mpi=pmix), Slurm without either (an error),
// then a singleton.
var detectors = []detector{
	{SourceCommtune, detectCommtune},
	{SourcePMI, detectPMI},
	{SourcePMIx, detectPMIx},
	{"slurm", detectSlurmWithoutPMI},
	{SourceSingleton, detectSingleton},
}

// detectSlurmWithoutPMI stops a program srun started as several tasks
// without a PMI plugin: each task would otherwise run alone as a
// singleton.
func detectSlurmWithoutPMI(_ context.Context, lookup func(string) (string, bool)) (*Job, bool, error) {
	if err := slurmWithoutPMI(lookup); err != nil {
		return nil, true, err
	}
	return nil, false, nil
}

// slurmWithoutPMI is the error for tasks of a Slurm step of several that
// were given no PMI, nil otherwise.
func slurmWithoutPMI(lookup func(string) (string, bool)) error {
	_, procid := lookup("SLURM_PROCID")
	ntasks, _ := lookup("SLURM_NTASKS")
	if n, err := strconv.Atoi(ntasks); procid && err == nil && n > 1 {
		return fmt.Errorf("started by Slurm as %d tasks without PMI: run srun --mpi=pmix or --mpi=pmi2", n)
	}
	return nil
}

// Discover finds the job this process belongs to by trying detectors in
// order. Under the commtune launcher it connects to the launcher's KVS; with
// no launcher at all it returns a singleton (Rank 0, Size 1, KV nil, a fresh
// random secret).
func Discover(ctx context.Context) (*Job, error) {
	return discover(ctx, os.LookupEnv)
}

func discover(ctx context.Context, lookup func(string) (string, bool)) (*Job, error) {
	// COMMTUNE_PMI and COMMTUNE_PMIX are checked whichever source starts
	// the job: a value
	// that means nothing is a mistake even where it goes unused.
	if _, err := pmiSetting(lookup); err != nil {
		return nil, fmt.Errorf("boot: %w", err)
	}
	if _, err := pmixSetting(lookup); err != nil {
		return nil, fmt.Errorf("boot: %w", err)
	}
	keepGoing, err := keepGoingSetting(lookup)
	if err != nil {
		return nil, fmt.Errorf("boot: %w", err)
	}
	for _, d := range detectors {
		j, ok, err := d.detect(ctx, lookup)
		if err != nil {
			return nil, fmt.Errorf("boot (%s): %w", d.name, err)
		}
		if ok {
			j.KeepGoing = keepGoing
			return j, nil
		}
	}
	// The singleton detector always answers; reaching here is a bug in the
	// list above, reported rather than papered over.
	return nil, fmt.Errorf("boot: no job source recognised this process")
}

func detectCommtune(ctx context.Context, lookup func(string) (string, bool)) (*Job, bool, error) {
	l, ok, err := parseEnv(lookup)
	if !ok || err != nil {
		return nil, ok, err
	}
	j := &l.job
	if j.Node == "" {
		j.Node = hostname()
	}
	kv, err := dialKV(ctx, l.boot, j.Secret, j.Rank, j.Size)
	if err != nil {
		return nil, true, fmt.Errorf("connecting to %s=%s: %w", EnvBoot, l.boot, err)
	}
	j.KV = kv
	j.Server = l.boot
	j.Protocol = "commtune kvs"
	return j, true, nil
}

func detectSingleton(context.Context, func(string) (string, bool)) (*Job, bool, error) {
	secret, err := auth.NewSecret()
	if err != nil {
		return nil, true, err
	}
	id, err := NewJobID()
	if err != nil {
		return nil, true, err
	}
	return &Job{
		Rank: 0, Size: 1, LocalRank: 0, LocalSize: 1,
		ID: id, Secret: secret, Node: hostname(), Source: SourceSingleton,
	}, true, nil
}

// NewJobID returns a fresh random job id (16 hex digits), valid for
// ValidJobID.
func NewJobID() (string, error) {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("making a job id: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// hostname returns the node identity used when none is given: the host
// name, or "localhost" if the kernel will not say (every rank of the node
// then agrees on it, which is all locality needs).
func hostname() string {
	if h, err := os.Hostname(); err == nil && validNode(h) {
		return h
	}
	return "localhost"
}
