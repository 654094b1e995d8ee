package job

import "github.com/commtune/commtune/internal/config"

// bindCPU returns the processor a rank binds to under cfg.Bind: with
// "auto", the localRank-th of those it may run on when every local rank
// can have one of its own; -1 for none (more ranks than processors, a
// launcher that bound the rank already, or "none").
func bindCPU(bind string, localRank, localRanks int, allowed []int) int {
	if bind != config.BindAuto || localRanks < 2 || localRank < 0 || localRank >= localRanks || len(allowed) < localRanks {
		return -1
	}
	return allowed[localRank]
}
