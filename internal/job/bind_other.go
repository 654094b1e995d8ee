//go:build !linux

package job

import "github.com/commtune/commtune/internal/config"

// bindRank leaves the rank unbound where commtune does not bind (only
// Linux does).
func bindRank(config.Config, int, int) int { return -1 }
