package boot

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The job's shape under PMIx: its size and the ranks of this node, read
// from the job data the server sends at the start.

// start reads the job's shape and derives its secret.
func (c *pmixClient) start(ctx context.Context) (*Job, error) {
	body, err := c.request(ctx, pmiReplyTimeout, "the job data request", c.command(pmixCmdReq).b)
	if err != nil {
		return nil, err
	}
	shape := parseJobData(body, c.enc, c.nspace, c.rank)
	if shape.size == 0 || shape.lpeers == nil {
		// The job data used a value this client does not decode (values
		// carry no length to skip): ask for the two facts it needs.
		if err := c.askShape(ctx, &shape); err != nil {
			if shape.err != nil {
				return nil, fmt.Errorf("%w (the job data was no help: %v)", err, shape.err)
			}
			return nil, err
		}
	}
	if int(c.rank) >= shape.size {
		return nil, fmt.Errorf("%w: %s=%d but the job has %d ranks", ErrPMIx, EnvPMIxRank, c.rank, shape.size)
	}
	c.mu.Lock()
	c.size = shape.size
	c.mu.Unlock()
	j := &Job{Rank: int(c.rank), Size: shape.size, KV: c, Source: SourcePMIx, ID: jobID(c.nspace),
		Protocol: "PMIx " + c.bfrops}
	if err := placeLocal(j, shape.lpeers); err != nil {
		return nil, err
	}
	if j.Secret, err = deriveSecret(ctx, c, j.Rank, c.nspace); err != nil {
		return nil, err
	}
	return j, nil
}

// jobShape is what a rank needs from the job data: the size and the ranks
// on its node.
type jobShape struct {
	size   int
	lpeers []int
	err    error // why the job data's reading stopped early, if it did
}

// parseJobData reads the reply to the job data request: the namespace,
// then one key-value per pack. The job size is "pmix.job.size"; the ranks
// on this node are "pmix.lpeers" inside the "pmix.node.arr" entry that
// lists this rank. It returns what it found before the first value it
// cannot decode.
func parseJobData(body []byte, enc pmixEncoding, nspace string, rank uint32) jobShape {
	var s jobShape
	r := &pmixReader{b: body, enc: enc}
	r.one("namespace")
	if ns := r.str("namespace"); r.err != nil || ns != nspace {
		return s
	}
	for r.err == nil && r.left() > 0 {
		n := r.count("job data")
		for i := 0; i < n && r.err == nil; i++ {
			kv := r.kval("job data")
			if r.err != nil {
				break
			}
			switch kv.key {
			case "pmix.job.size":
				if v, ok := kv.value.(uint64); ok && v > 0 && v <= MaxSize {
					s.size = int(v)
				}
			case "pmix.node.arr":
				items, _ := kv.value.([]pmixInfoItem)
				for _, it := range items {
					if it.key != "pmix.lpeers" {
						continue
					}
					if peers, err := parseRankList(fmt.Sprint(it.value)); err == nil && containsRank(peers, int(rank)) {
						s.lpeers = peers
					}
				}
			}
		}
	}
	s.err = r.err
	return s
}

// askShape asks the server for the job size and this node's ranks.
func (c *pmixClient) askShape(ctx context.Context, s *jobShape) error {
	deadline := time.Now().Add(pmiReplyTimeout)
	v, err := c.get(ctx, deadline, pmixRankWildcard, "pmix.job.size")
	if err != nil {
		return err
	}
	n, ok := v.(uint64)
	if !ok || n == 0 || n > MaxSize {
		return fmt.Errorf("%w: pmix.job.size is %v", ErrPMIx, v)
	}
	s.size = int(n)
	v, err = c.get(ctx, deadline, pmixRankWildcard, "pmix.lpeers")
	if err != nil {
		return err
	}
	text, ok := v.(string)
	if !ok {
		return fmt.Errorf("%w: pmix.lpeers is %v, not a list of ranks", ErrPMIx, v)
	}
	if s.lpeers, err = parseRankList(text); err != nil {
		return err
	}
	return nil
}

// parseRankList reads "0,1,5".
func parseRankList(text string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(text, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 0 || n >= MaxSize {
			return nil, fmt.Errorf("%w: %q is not a list of ranks", ErrPMIx, clip(text))
		}
		out = append(out, n)
	}
	return out, nil
}

func containsRank(rs []int, r int) bool {
	for _, x := range rs {
		if x == r {
			return true
		}
	}
	return false
}

// placeLocal sets the local rank and size from the ranks on this node; the
// node is named by its lowest rank, which every rank there agrees on.
func placeLocal(j *Job, lpeers []int) error {
	if !containsRank(lpeers, j.Rank) {
		return fmt.Errorf("%w: rank %d is not among its node's ranks %v", ErrPMIx, j.Rank, lpeers)
	}
	low := j.Rank
	for _, r := range lpeers {
		if r >= j.Size {
			return fmt.Errorf("%w: the node's ranks %v name one past the job's %d", ErrPMIx, lpeers, j.Size)
		}
		low = min(low, r)
		if r < j.Rank {
			j.LocalRank++
		}
	}
	j.LocalSize = len(lpeers)
	j.Node = "pmix-node-" + strconv.Itoa(low)
	return nil
}
