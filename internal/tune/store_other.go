//go:build !unix

package tune

import (
	"errors"
	"time"
)

// lockFile is not supported off Unix: SaveState needs flock to keep
// concurrent jobs from losing each other's learning.
func lockFile(path string, timeout time.Duration) (unlock func(), err error) {
	return nil, errors.New("saving the tuning state is not supported on this OS (no flock)")
}
