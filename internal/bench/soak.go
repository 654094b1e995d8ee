package bench

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/commtune/commtune"
)

// SoakMaxSize is the largest point-to-point message and collective vector
// of a soak unless told: 4 MiB, past every eager limit, segment size and
// rendezvous threshold.
const SoakMaxSize = 4 << 20

// SoakStepTimeout is how long one step may take before the soak fails
// naming it, unless told: a step that hangs is a defect like a wrong byte.
const SoakStepTimeout = 2 * time.Minute

// SoakConfig says how a soak runs; every rank passes the same.
type SoakConfig struct {
	Duration    time.Duration // how long the ranks run steps
	Every       time.Duration // how often they sample
	Seed        uint64        // chooses every step, size and payload
	MaxSize     int           // bytes; 0: SoakMaxSize
	StepTimeout time.Duration // 0: SoakStepTimeout
	// OneProcess says the ranks are goroutines of one process (Local):
	// rank 0 alone reads the process's figures, which are the job's.
	OneProcess bool
	// Job is the job's id, whose /dev/shm files rank 0 sums; "" for none.
	Job string
	// Progress, if set, is called on rank 0 with each sample.
	Progress func(SoakSample)
	// HeapProfiles, if set, is a directory where each rank writes its heap
	// profile at each sample (heap-rank-R-K.pb.gz, K counting samples from
	// 0), for `go tool pprof -base` between two samples: where memory that
	// grows was allocated. The process must sample allocations
	// (runtime.MemProfileRate, set before the job starts).
	HeapProfiles string
}

// SoakReport is what a soak found, on rank 0; `commtune bench soak
// --json` prints it.
type SoakReport struct {
	Bench     string           `json:"bench"` // "soak"
	Transport string           `json:"transport"`
	Ranks     int              `json:"ranks"`
	Seed      uint64           `json:"seed"`
	Duration  time.Duration    `json:"duration_ns"`
	Every     time.Duration    `json:"every_ns"`
	Ops       map[string]int64 `json:"ops"` // steps of each kind rank 0 ran
	Samples   []SoakSample     `json:"samples"`
	Errors    []string         `json:"errors,omitempty"` // the first payload errors of each rank, maxPayloadErrors in all at most
	Verdict   SoakVerdict      `json:"verdict"`
}

// The per-step word rank 0 broadcasts: go on, sample, or sample and stop.
const (
	soakGoOn   = 0
	soakSample = 1
	soakStop   = 2
)

// Soak runs cfg's soak on every rank of c: steps of mixed traffic, each
// chosen by a generator seeded with (cfg.Seed, step) and so the same on
// every rank, every payload checked on arrival; a sample every cfg.Every
// and at the end. Rank 0 returns the report (others nil). An error is a
// call that failed or a step that timed out; wrong payloads are counted in
// the report, not errors.
func Soak(ctx context.Context, c *commtune.Comm, cfg SoakConfig) (*SoakReport, error) {
	if cfg.Duration <= 0 || cfg.Every <= 0 {
		return nil, fmt.Errorf("soak: duration %v and interval %v must be positive", cfg.Duration, cfg.Every)
	}
	if cfg.MaxSize <= 0 {
		cfg.MaxSize = SoakMaxSize
	}
	if cfg.StepTimeout <= 0 {
		cfg.StepTimeout = SoakStepTimeout
	}
	s := &soakRank{world: c, cfg: cfg, ops: map[string]int64{}}
	if err := s.setup(ctx); err != nil {
		return nil, fmt.Errorf("soak: setting up: %w", err)
	}
	defer s.closeDerived()
	var samples []SoakSample
	start := time.Now()
	next := start.Add(cfg.Every)
	ctl := []int64{soakGoOn}
	for ctl[0] != soakStop {
		s.step++
		if err := s.runStep(ctx); err != nil {
			return nil, err
		}
		if c.Rank() == 0 {
			switch now := time.Now(); {
			case now.Sub(start) >= cfg.Duration:
				ctl[0] = soakStop
			case !now.Before(next):
				ctl[0] = soakSample
				for !next.After(now) {
					next = next.Add(cfg.Every)
				}
			default:
				ctl[0] = soakGoOn
			}
		}
		if err := commtune.Bcast(ctx, c, ctl, 0); err != nil {
			return nil, fmt.Errorf("soak: after step %d: %w", s.step, err)
		}
		if ctl[0] == soakGoOn {
			continue
		}
		sm, err := s.sample(ctx, time.Since(start))
		if err != nil {
			return nil, fmt.Errorf("soak: sample after step %d: %w", s.step, err)
		}
		if c.Rank() == 0 {
			samples = append(samples, sm)
			if cfg.Progress != nil {
				cfg.Progress(sm)
			}
		}
	}
	msgs, err := commtune.GatherValues(ctx, c, s.errs.msgs, 0)
	if err != nil {
		return nil, fmt.Errorf("soak: gathering payload errors: %w", err)
	}
	if c.Rank() != 0 {
		return nil, nil
	}
	rep := &SoakReport{Bench: "soak", Ranks: c.Size(), Seed: cfg.Seed, Duration: cfg.Duration, Every: cfg.Every,
		Ops: s.ops, Samples: samples, Verdict: JudgeSoak(samples)}
	for _, m := range msgs {
		for _, e := range m {
			if len(rep.Errors) < maxPayloadErrors {
				rep.Errors = append(rep.Errors, e)
			}
		}
	}
	return rep, nil
}

// usageFields is how many figures a rank contributes to a sample.
const usageFields = 11

// sample takes a sample: the derived communicators closed and a barrier,
// so that no step is under way on any rank; each rank reads its usage; a
// barrier again; rank 0 gathers them (through the library) and returns
// their sums.
func (s *soakRank) sample(ctx context.Context, elapsed time.Duration) (SoakSample, error) {
	c := s.world
	// The derived communicators go first: how many are alive, and the
	// segments they hold, depend on where in their churn the sample falls.
	s.closeDerived()
	if err := c.Barrier(ctx); err != nil {
		return SoakSample{}, err
	}
	mine := make([]int64, usageFields)
	if !s.cfg.OneProcess || c.Rank() == 0 {
		u, err := ReadRankUsage()
		if err != nil {
			return SoakSample{}, err
		}
		mine[0], mine[1], mine[2], mine[3] = u.RSS, u.ShmMapped, u.FDs, u.Goroutines
		mine[7], mine[8], mine[9], mine[10] = u.RSSAnon, u.RSSFile, u.RSSShmem, u.GoHeap
	}
	if s.cfg.HeapProfiles != "" && (!s.cfg.OneProcess || c.Rank() == 0) {
		if err := writeHeapProfile(s.cfg.HeapProfiles, c.Rank(), s.samples); err != nil {
			return SoakSample{}, err
		}
	}
	s.samples++
	if c.Rank() == 0 {
		f, err := JobShmFiles(s.cfg.Job)
		if err != nil {
			return SoakSample{}, err
		}
		mine[4] = f
	}
	mine[5], mine[6] = s.step, s.errs.count
	// No rank goes on (to its next step, or to closing its connections
	// after the last sample) while another still counts.
	if err := c.Barrier(ctx); err != nil {
		return SoakSample{}, err
	}
	var all []int64
	if c.Rank() == 0 {
		all = make([]int64, usageFields*c.Size())
	}
	if err := commtune.Gather(ctx, c, mine, all, 0); err != nil {
		return SoakSample{}, err
	}
	sm := SoakSample{Elapsed: elapsed, Steps: s.step}
	for r := range len(all) / usageFields {
		u := all[r*usageFields:]
		sm.RSSSum += u[0]
		sm.RSSMax = max(sm.RSSMax, u[0])
		sm.ShmMapped += u[1]
		sm.FDs += u[2]
		sm.Goroutines += u[3]
		sm.ShmFiles += u[4]
		sm.PayloadErrors += u[6]
		sm.RSSAnon += u[7]
		sm.RSSFile += u[8]
		sm.RSSShmem += u[9]
		sm.GoHeap += u[10]
	}
	return sm, nil
}

// soakRank is one rank's state in a soak.
type soakRank struct {
	world *commtune.Comm
	cfg   SoakConfig
	step  int64
	// samples counts the samples taken.
	samples int
	ctx     context.Context // the step's
	errs    soakErrors
	ops     map[string]int64
	// derived are the communicators made from the world by Dup and Split
	// and not yet closed, the same list on every rank; nil where this rank
	// is not a member.
	derived []*commtune.Comm
	halo    *soakHalo
}

// maxDerived bounds the live derived communicators.
const maxDerived = 4

func (s *soakRank) setup(ctx context.Context) error {
	h, err := newSoakHalo(s.world, s.cfg.Seed)
	s.halo = h
	return err
}

func (s *soakRank) closeDerived() {
	for _, d := range s.derived {
		d.Close()
	}
	s.derived = nil
}

// id names payload part of rank in the current step.
func (s *soakRank) id(rank, part int) PayloadID {
	return PayloadID{Seed: s.cfg.Seed, Step: s.step, Rank: rank, Part: part}
}

// sentinel is what a rank's receive buffers hold before a call: its own
// bytes, of a part no one sends, so that a byte left untouched, or
// written where no block goes, differs from every payload.
func (s *soakRank) sentinel(me int) PayloadID { return s.id(me, -1) }

// runStep runs the current step: it draws the operation and, for most,
// the communicator, from the step's generator, then runs it there.
func (s *soakRank) runStep(ctx context.Context) error {
	rng := rand.New(rand.NewPCG(s.cfg.Seed, uint64(s.step)))
	op := pickSoakOp(rng)
	c, where := s.world, ""
	if !op.worldOnly && len(s.derived) > 0 {
		if j := rng.IntN(len(s.derived) + 1); j > 0 {
			c = s.derived[j-1]
			if c == nil {
				return nil // this rank is not in it
			}
			where = fmt.Sprintf(" on derived communicator %d", j)
		}
	}
	sctx, cancel := context.WithTimeout(ctx, s.cfg.StepTimeout)
	defer cancel()
	s.ctx = sctx
	name, err := op.run(s, c, rng)
	s.ops[name]++
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			err = fmt.Errorf("did not finish within %v: %w", s.cfg.StepTimeout, err)
		}
		return fmt.Errorf("soak: step %d, %s%s: %w", s.step, name, where, err)
	}
	return nil
}
