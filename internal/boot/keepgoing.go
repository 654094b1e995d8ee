package boot

import (
	"fmt"
	"strings"

	"github.com/commtune/commtune/internal/setting"
)

// EnvKeepGoing says that the job survives the loss of a rank: `commtune
// run --keep-going` sets it to 1 for each rank (and it is not inherited
// from the launcher's environment otherwise); under another process
// manager started so that it does not end the job on a loss (Hydra's
// -disable-auto-cleanup, Open MPI's --enable-recovery, srun --no-kill) the
// user sets it (docs/launcher.md). Its ranks then take the launcher's
// reports of lost ranks (LossWatcher) as lost peers.
const EnvKeepGoing = "COMMTUNE_KEEP_GOING"

// keepGoingSetting reads EnvKeepGoing: 1 is on, 0 or unset off.
func keepGoingSetting(lookup func(string) (string, bool)) (bool, error) {
	v, _ := lookup(EnvKeepGoing)
	switch strings.TrimSpace(v) {
	case "", "0":
		return false, nil
	case "1":
		return true, nil
	}
	return false, fmt.Errorf("%w: %w", ErrEnv, setting.Bad(setting.Env(EnvKeepGoing, v), "1 (the job survives a lost rank) or 0"))
}
