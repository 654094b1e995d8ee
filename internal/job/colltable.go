package job

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/commtune/commtune/internal/coll"
	"github.com/commtune/commtune/internal/config"
	"github.com/commtune/commtune/internal/profile"
)

// CollTableFor returns the collective decision table the profile's node
// passes sampled (nil if none, or if the configuration keeps the fixed
// table), and why. A table naming an operation or algorithm this commtune
// does not know is not used: every rank reads the same profile, so all of
// them fall back alike.
func CollTableFor(cfg config.Config, prof *profile.Profile) (*coll.Table, string) {
	if cfg.CollSelect == config.CollSelectFixed {
		return nil, "fixed table (" + config.EnvCollSelect + "=" + config.CollSelectFixed + ")"
	}
	if prof == nil || prof.Transports["shm"] == nil || len(prof.Transports["shm"].Coll) == 0 {
		return nil, "fixed table: the profile has no sampled table (run `commtune sample`)"
	}
	shm := prof.Transports["shm"]
	t := coll.NewTable()
	for _, n := range shm.CollRanks() {
		for name, points := range shm.Coll[strconv.Itoa(n)] {
			op := coll.Operation(name)
			if !slices.Contains(coll.Operations, op) {
				return nil, fmt.Sprintf("fixed table: the profile's sampled table names an operation %q this commtune does not know", name)
			}
			var tps []coll.TablePoint
			for _, p := range points {
				tp := coll.TablePoint{Bytes: int(p.Bytes)}
				for _, r := range p.Ranked {
					a, err := coll.Parse(op, r.Algo)
					if err != nil {
						return nil, fmt.Sprintf("fixed table: the profile's sampled table: %v", err)
					}
					tp.Ranked, tp.MeanUS = append(tp.Ranked, a), append(tp.MeanUS, r.MeanUS)
				}
				tps = append(tps, tp)
			}
			t.Add(op, n, tps)
		}
	}
	return t, fmt.Sprintf("sampled table for %s ranks on %d processors (profile), the fixed table elsewhere", joinInts(shm.CollRanks()), shm.NodeCPUs)
}

func joinInts(ns []int) string {
	s := ""
	for i, n := range ns {
		if i > 0 {
			s += ", "
		}
		s += strconv.Itoa(n)
	}
	return s
}
