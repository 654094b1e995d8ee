package config

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/commtune/commtune/internal/coll"
	"github.com/commtune/commtune/internal/halo"
	"github.com/commtune/commtune/internal/setting"
	"github.com/commtune/commtune/internal/units"
)

// checkFields checks the fields alone. The environment's values passed
// already, so an error here is an Option's, named by its field.
func (c *Config) checkFields() error {
	bad := func(field string, v any, want string, args ...any) error {
		return setting.Bad(setting.Field("Config."+field, v), want, args...)
	}
	switch {
	case c.RendezvousThreshold < 0:
		return bad("RendezvousThreshold", c.RendezvousThreshold, "a size in bytes (0 for the default)")
	case c.UnexpectedLimit < 0:
		return bad("UnexpectedLimit", c.UnexpectedLimit, "a size in bytes (0 for the default)")
	case len(c.Rails) > 0 && !validRails(c.Rails):
		return bad("Rails", c.Rails, "%s", railsWant)
	case c.ConnectTimeout < 0:
		return bad("ConnectTimeout", c.ConnectTimeout, "%s (0 for the default)", timeoutWant)
	case len(c.Transports) > 0 && !validTransports(c.Transports):
		return bad("Transports", c.Transports, "%s", transportsWant)
	case c.Shm.Method != "" && !slices.Contains(ShmMethods, c.Shm.Method):
		return bad("Shm.Method", c.Shm.Method, "%s", orList(ShmMethods))
	case c.Shm.Queue != "" && !slices.Contains(ShmQueueModes, c.Shm.Queue):
		return bad("Shm.Queue", c.Shm.Queue, "%s", orList(ShmQueueModes))
	case c.Shm.DMAMin < 0:
		return bad("Shm.DMAMin", c.Shm.DMAMin, "a size in bytes (0 for the default)")
	case c.Shm.Ring != 0 && !validRing(int64(c.Shm.Ring)):
		return bad("Shm.Ring", c.Shm.Ring, "%s (0 for the default)", ringWant)
	case c.Shm.Chunk < 0 || int64(c.Shm.Chunk) > maxChunk:
		return bad("Shm.Chunk", c.Shm.Chunk, "%s (0 for the default)", sizeWant(1, maxChunk, ""))
	case c.Shm.Budget != 0 && int64(c.Shm.Budget) < minBudget:
		return bad("Shm.Budget", c.Shm.Budget, "%s (0 for the default)", sizeWant(minBudget, math.MaxInt, ""))
	case c.CollSelect != "" && !slices.Contains(collSelects, c.CollSelect):
		return bad("CollSelect", c.CollSelect, "%s", orList(collSelects))
	case c.LotteryAlpha != 0 && !validFraction(c.LotteryAlpha):
		return bad("LotteryAlpha", c.LotteryAlpha, "%s (0 for the default)", fractionWant)
	case c.LotteryWeight != 0 && !validFraction(c.LotteryWeight):
		return bad("LotteryWeight", c.LotteryWeight, "%s (0 for the default)", fractionWant)
	case c.LotteryMinTTL < 0 || c.LotteryMinTTL > MaxTTL:
		return bad("LotteryMinTTL", c.LotteryMinTTL, "a whole number of calls from 1 to %d (0 for the default)", MaxTTL)
	case c.LotteryMaxTTL < 0 || c.LotteryMaxTTL > MaxTTL:
		return bad("LotteryMaxTTL", c.LotteryMaxTTL, "a whole number of calls from 1 to %d (0 for the default)", MaxTTL)
	}
	return nil
}

// checkTogether checks the settings that must agree, each set and valid
// alone. A setting left at its default follows the other (fillDefaults,
// shm.Config), so only two set together conflict, and the error names
// both as the user gave them.
func (c *Config) checkTogether(fromEnv Config) error {
	env := c.envText
	if c.Shm.Chunk > 0 && c.Shm.Ring > 0 && c.Shm.Chunk > c.Shm.Ring/4 {
		return setting.Conflict(env.given(EnvShmChunk, "Config.Shm.Chunk", c.Shm.Chunk, fromEnv.Shm.Chunk),
			env.given(EnvShmRing, "Config.Shm.Ring", c.Shm.Ring, fromEnv.Shm.Ring),
			"a chunk of at most a quarter of the ring (%s)", units.FormatSize(int64(c.Shm.Ring/4)))
	}
	if c.LotteryMinTTL > 0 && c.LotteryMaxTTL > 0 && c.LotteryMinTTL > c.LotteryMaxTTL {
		return setting.Conflict(env.given(EnvLotteryMinTTL, "Config.LotteryMinTTL", c.LotteryMinTTL, fromEnv.LotteryMinTTL),
			env.given(EnvLotteryMaxTTL, "Config.LotteryMaxTTL", c.LotteryMaxTTL, fromEnv.LotteryMaxTTL),
			"the least calls per draw no more than the most")
	}
	return nil
}

// fillDefaults sets the defaults the checks left: a TTL bound left unset
// follows the other when the default would cross it.
func (c *Config) fillDefaults() {
	if c.ConnectTimeout == 0 {
		c.ConnectTimeout = DefaultConnectTimeout
	}
	if len(c.Transports) == 0 {
		c.Transports = DefaultTransports
	}
	if c.Shm.Method == "" {
		c.Shm.Method = "auto"
	}
	if c.CollSelect == "" {
		c.CollSelect = CollSelectLearn
	}
	switch {
	case c.LotteryMinTTL == 0 && c.LotteryMaxTTL == 0:
		c.LotteryMinTTL, c.LotteryMaxTTL = defaultLotteryMinTTL, defaultLotteryMaxTTL
	case c.LotteryMinTTL == 0:
		c.LotteryMinTTL = min(defaultLotteryMinTTL, c.LotteryMaxTTL)
	case c.LotteryMaxTTL == 0:
		c.LotteryMaxTTL = max(defaultLotteryMaxTTL, c.LotteryMinTTL)
	}
}

// parseCollectives checks Collectives and keeps them parsed; an error
// names the variable when the algorithm is the one it gave.
func (c *Config) parseCollectives() error {
	c.collForced = nil
	for name, spec := range c.Collectives {
		op := coll.Operation(strings.ToLower(name))
		a, err := coll.Parse(op, spec)
		if err != nil {
			g := c.envText.given(collEnv(op), fmt.Sprintf("Config.Collectives[%q]", name), spec, c.envText[collEnv(op)])
			if !slices.Contains(coll.Operations, op) {
				return setting.Bad(g, "an operation's name as the key (%s)", opNames())
			}
			return setting.Bad(g, "an algorithm of %s (%v)", op, err)
		}
		if c.collForced == nil {
			c.collForced = map[coll.Operation]coll.Algorithm{}
		}
		c.collForced[op] = a
	}
	return nil
}

// collEnv is the variable forcing op's algorithm: COMMTUNE_COLL_BCAST …
func collEnv(op coll.Operation) string { return EnvCollPrefix + strings.ToUpper(string(op)) }

// opNames lists the collective operations, for errors.
func opNames() string {
	names := make([]string, len(coll.Operations))
	for i, op := range coll.Operations {
		names[i] = string(op)
	}
	return strings.Join(names, ", ")
}

// checkHalo validates the halo fields and fills their defaults.
func (c *Config) checkHalo() error {
	switch c.HaloSelect {
	case "":
		c.HaloSelect = HaloSelectLearn
	case HaloSelectLearn, HaloSelectBrute, HaloSelectHypothesis:
	default:
		if _, ok := halo.LookupImpl(c.HaloSelect); !ok {
			return setting.Bad(setting.Field("Config.HaloSelect", c.HaloSelect), "%s or an implementation: %s",
				strings.Join(HaloSelectors, ", "), halo.ImplList())
		}
	}
	switch c.HaloOrder {
	case "":
		c.HaloOrder = HaloOrderInterleaved
	case HaloOrderInterleaved, HaloOrderConsecutive:
	default:
		return setting.Bad(setting.Field("Config.HaloOrder", c.HaloOrder), "%s", orList(haloOrders))
	}
	if c.HaloSamples < 0 || c.HaloSamples > MaxHaloSamples {
		return setting.Bad(setting.Field("Config.HaloSamples", c.HaloSamples), "a whole number of exchanges from 1 to %d (0 for the default)", MaxHaloSamples)
	}
	return nil
}

// checkBind validates Bind and fills its default.
func (c *Config) checkBind() error { return oneOfField(&c.Bind, "Config.Bind", BindAuto, binds) }

// oneOfField sets *v to def when empty, else checks that it is one of
// valid; name is the field's, for the error.
func oneOfField(v *string, name, def string, valid []string) error {
	switch {
	case *v == "":
		*v = def
	case !slices.Contains(valid, *v):
		return setting.Bad(setting.Field(name, *v), "%s", orList(valid))
	}
	return nil
}

// checkMultirail validates the split and aggregation fields and fills
// their defaults.
func (c *Config) checkMultirail() error {
	// The environment's values were checked as they were read
	// (applyEnv): an error here is an Option's, named by its field.
	if err := oneOfField(&c.Split, "Config.Split", SplitCurves, splits); err != nil {
		return err
	}
	if c.Aggregation > MaxAggregation {
		return setting.Bad(setting.Field("Config.Aggregation", c.Aggregation),
			"at most %d bytes (0 for the default, negative for off)", MaxAggregation)
	}
	return nil
}
