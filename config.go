package commtune

import (
	"fmt"
	"math"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/commtune/commtune/internal/coll"
	"github.com/commtune/commtune/internal/core"
	"github.com/commtune/commtune/internal/driver/shm"
	"github.com/commtune/commtune/internal/setting"
	"github.com/commtune/commtune/internal/topo"
	"github.com/commtune/commtune/internal/tune"
	"github.com/commtune/commtune/internal/units"
)

// Config holds commtune's tunable parameters. A zero field means its
// documented default. Settings apply in this order, later ones winning:
// defaults, environment variables (listed per field and in the README),
// then Options passed to Init or Local.
type Config struct {
	// RendezvousThreshold is the largest message sent eagerly (header and
	// payload at once); larger ones use rendezvous (RTS, CTS, then the data
	// straight into the receive buffer). Default: the profile's threshold,
	// else 64 KiB.
	// Env: COMMTUNE_RNDV_THRESHOLD (a size: 32K, 1M …).
	RendezvousThreshold int
	// IovecThreshold is the smallest eager payload handed to the transport
	// by reference (writev of header and user buffer); smaller payloads are
	// copied behind the header. Default: the profile's threshold, else
	// 2 KiB; negative means always copy.
	// Env: COMMTUNE_IOVEC_THRESHOLD (a size, 0 for every payload, or never).
	IovecThreshold int
	// UnexpectedLimit bounds the memory a rank uses to buffer eager messages
	// that arrive before their receive is posted, shared equally among
	// senders as credits; a sender out of credit switches to rendezvous, so
	// nothing is lost. Must be equal on all ranks. Default 64 MiB.
	// Env: COMMTUNE_UNEXPECTED_LIMIT.
	UnexpectedLimit int64
	// Rails are where TCP listens, one rail each: hosts, host:port or
	// interface names ("eth1"); every rank must list the same number.
	// Default: on a job within one node, one rail on 127.0.0.1; across
	// nodes, every network all its nodes are on (at most 4), the one that
	// reaches the launcher (or Hydra's -iface) first.
	// Env: COMMTUNE_RAILS (comma-separated).
	Rails []string
	// SpinWait is how long a goroutine waiting for a request polls the
	// network itself, with no byte arriving, before parking. Polling lets
	// the waiting goroutine receive its message with no thread wake-up
	// (3–30 µs on a virtual machine) and keeps it on the processor that
	// will use it; parking frees the processor. Default 200 µs. When more
	// ranks run on this node than it has processors, a waiter yields its
	// processor (sched_yield) after every poll that finds nothing, so the
	// rank it waits for runs, and the default is 2 ms. Negative means never
	// poll.
	// Env: COMMTUNE_SPIN_WAIT (a Go duration: 50us, 0s, -1s).
	SpinWait time.Duration
	// Transports names the transports to use: "shm" for ranks on this node
	// (when listed), "tcp" for the others. Default shm,tcp.
	// Env: COMMTUNE_TRANSPORTS (e.g. tcp to use TCP on one node too).
	Transports []string
	// Shm tunes the shared-memory transport.
	Shm ShmConfig
	// ConnectTimeout bounds how long Init waits for every peer to connect.
	// Default 30 s. Env: COMMTUNE_CONNECT_TIMEOUT (a Go duration).
	ConnectTimeout time.Duration
	// Profile is the tuning profile `commtune sample` wrote: its path, or
	// "" for this platform's in the cache directory
	// ($XDG_CACHE_HOME/commtune, else ~/.cache/commtune), or "off" to run
	// on the defaults without looking for one. Thresholds set explicitly
	// (fields above, or their variables) override the profile's.
	// Env: COMMTUNE_PROFILE.
	Profile string
	// Collectives forces collective algorithms: operation name (bcast,
	// allreduce …) → algorithm, as `commtune bench coll` names it or in
	// short ("binomial:seg=16K"). Every rank must force the same. A forced
	// algorithm that cannot keep a non-commutative reduction in rank order
	// is not used for one. Default: the fixed decision table
	// (docs/collectives.md).
	// Env: COMMTUNE_COLL_<OP>, e.g. COMMTUNE_COLL_BCAST=binomial:seg=16K.
	Collectives map[string]string
	// CollSelect is how a blocking collective call whose algorithm is not
	// forced (Collectives, WithAlgorithm) gets one: "table", the fixed
	// decision table; or "lottery", the lottery scheduler (seed 001 §6),
	// which rank 0 of the communicator draws among a few candidates, the
	// table's choice first, learning from the calls' times while the
	// program runs. Every rank must set the same. Default table.
	// Env: COMMTUNE_COLL_SELECT.
	CollSelect string
	// LotteryAlpha is the share of the lottery's tickets held by the
	// candidate with the best average time (seed 001 §6.1.2), in (0, 1].
	// Default 0.8. Env: COMMTUNE_LOTTERY_ALPHA.
	LotteryAlpha float64
	// LotteryWeight is the weight of a call's time in its candidate's
	// exponential average, in (0, 1]. Default 1/8: the average spans about
	// the last 15 samples. Env: COMMTUNE_LOTTERY_WEIGHT.
	LotteryWeight float64
	// LotteryMinTTL and LotteryMaxTTL bound the calls one draw of the
	// lottery stands for: the best candidate runs ⌊α·LotteryMaxTTL⌋ calls
	// per draw, any other at least LotteryMinTTL. A switch of algorithm
	// costs by itself (the first call after one took up to nine times its
	// steady time at 1 MiB here), so windows are long and the first call
	// after a switch is not timed. Each from 1 to 65536, min ≤ max.
	// Defaults 4 and 32; with only one set, the other follows it where its
	// default would cross it. Env: COMMTUNE_LOTTERY_MIN_TTL,
	// COMMTUNE_LOTTERY_MAX_TTL.
	LotteryMinTTL, LotteryMaxTTL int
	// TuneState is the file where the lottery's learning is kept between
	// jobs (seed 001 §6.1.3): rank 0 of a job of several processes restores
	// the lottery from it at Init and adds what it learned at Close, under
	// a lock, so jobs sharing it lose nothing. "" for this platform's,
	// next to the profile and named by the same fingerprint
	// (<profile path without .json>.tune.json); "off" to keep nothing; or
	// a path. Used only with CollSelect "lottery"; goroutine ranks (Local)
	// keep nothing. Env: COMMTUNE_TUNE_STATE.
	TuneState string
	// HaloSelect is how a Halo created without WithHaloImpl gets its
	// implementation: "brute" measures every implementation HaloSamples
	// times and keeps the fastest (seed 003 §II-A); "hypothesis" settles
	// one attribute at a time and measures fewer (seed 003 §III); the name
	// of an implementation (HaloImpls) uses it alone, without measuring.
	// After a selection the winner's time is watched, and the selection
	// starts again when it drifts. Every rank must set the same. Default
	// brute. Env: COMMTUNE_HALO_SELECT.
	HaloSelect string
	// HaloSamples is how many exchanges measure each implementation during
	// a halo selection. Default 10. Env: COMMTUNE_HALO_SAMPLES.
	HaloSamples int
	// HaloOrder is the order of a halo selection's measurements:
	// "interleaved", one exchange of each implementation in turn, which
	// spreads a slow spell of the machine over all of them; or
	// "consecutive", HaloSamples exchanges of one implementation in a row
	// (ADCL's order), so that each is measured after itself. Every rank
	// must set the same. Default interleaved. Env: COMMTUNE_HALO_ORDER.
	HaloOrder string
	// HaloState is the file where the winners of halo selections are kept
	// between jobs, keyed by platform, topology and array shape, so that a
	// rerun starts on the winner without exploring: "" for this
	// platform's, next to the profile (<profile path without
	// .json>.halo.json), used by jobs of several processes; "off" to keep
	// nothing; or a path, used by every job, goroutine ranks included.
	// Env: COMMTUNE_HALO_STATE.
	HaloState string

	// Split is how a large message to a peer reached by several rails is
	// divided among them: "curves", chunks solved on each rail's sampled
	// curve to finish together, counting when each busy rail frees (seed
	// 000 §III-C); "weighted", the seed's N-rail rule by asymptotic
	// bandwidth; "iso", equal chunks; "off", whole messages, one rail each.
	// Without a profile holding the rails' curves, "curves" and "weighted"
	// send whole messages. Default curves. Env: COMMTUNE_SPLIT.
	Split string
	// Aggregation is the size under which two messages queued for one
	// peer travel in one frame (seed 000 §II-D): 0 takes the profile's
	// threshold for the peer's transport, else the built-in default per
	// transport (DefaultAggregation); a negative value turns aggregation
	// off. Env: COMMTUNE_AGGREGATE (bytes, K/M suffixes, or "off").
	Aggregation int

	collForced map[coll.Operation]coll.Algorithm // Collectives, parsed
	envText    envText                           // the variables set, to name them in errors
	yieldWait  bool                              // ranks outnumber processors: waiters yield between polls
}

// Option adjusts the Config used by Init or Local.
type Option func(*Config)

// Environment variables read by commtune (the launcher's COMMTUNE_RANK and
// friends are listed in the README with the job variables).
const (
	EnvRendezvousThreshold = "COMMTUNE_RNDV_THRESHOLD"
	EnvIovecThreshold      = "COMMTUNE_IOVEC_THRESHOLD"
	EnvUnexpectedLimit     = "COMMTUNE_UNEXPECTED_LIMIT"
	EnvRails               = "COMMTUNE_RAILS"
	EnvConnectTimeout      = "COMMTUNE_CONNECT_TIMEOUT"
	EnvSpinWait            = "COMMTUNE_SPIN_WAIT"
	EnvProfile             = "COMMTUNE_PROFILE"
	// EnvCollPrefix + an operation's name in capitals forces its
	// algorithm: COMMTUNE_COLL_BCAST, COMMTUNE_COLL_ALLREDUCE …
	EnvCollPrefix = "COMMTUNE_COLL_"
	// EnvCollSelect chooses how collective algorithms are selected.
	EnvCollSelect    = "COMMTUNE_COLL_SELECT"
	EnvLotteryAlpha  = "COMMTUNE_LOTTERY_ALPHA"
	EnvLotteryWeight = "COMMTUNE_LOTTERY_WEIGHT"
	EnvLotteryMinTTL = "COMMTUNE_LOTTERY_MIN_TTL"
	EnvLotteryMaxTTL = "COMMTUNE_LOTTERY_MAX_TTL"
	EnvTuneState     = "COMMTUNE_TUNE_STATE"
	EnvHaloSelect    = "COMMTUNE_HALO_SELECT"
	EnvHaloSamples   = "COMMTUNE_HALO_SAMPLES"
	EnvHaloOrder     = "COMMTUNE_HALO_ORDER"
	EnvHaloState     = "COMMTUNE_HALO_STATE"
	EnvSplit         = "COMMTUNE_SPLIT"
	EnvAggregate     = "COMMTUNE_AGGREGATE"
)

// The collective lottery's TTL bounds (Config.LotteryMinTTL and
// LotteryMaxTTL). Measured at 2 000 calls on 4 ranks over shm (bcast and
// allreduce at 1 KiB and 1 MiB, two runs each), the lottery's mean time
// over the best fixed algorithm's averaged 1.28 with windows of 1 to 8
// calls and 1.15 with 4 to 32.
const (
	defaultLotteryMinTTL = 4
	defaultLotteryMaxTTL = 32
)

// Config.CollSelect values.
const (
	CollSelectTable   = "table"
	CollSelectLottery = "lottery"
)

// ProfileOff is the Config.Profile value that disables the profile.
const ProfileOff = "off"

// TuneStateOff is the Config.TuneState value that keeps no lottery state.
const TuneStateOff = "off"

// DefaultConnectTimeout is Config.ConnectTimeout's default.
const DefaultConnectTimeout = 30 * time.Second

// buildConfig applies the environment, then opts, to the defaults.
func buildConfig(opts []Option) (Config, error) {
	c, err := configFrom(os.LookupEnv, opts)
	if err != nil {
		return c, fmt.Errorf("commtune: %w", err)
	}
	return c, nil
}

// configFrom builds the Config in three passes, so that an error names the
// setting that is wrong and not another one it upsets: each variable alone
// as it is read (its name, its text, what it accepts); then each field the
// Options set, alone (Config.X); then the settings that must agree, named
// by where each value came from.
func configFrom(lookup func(string) (string, bool), opts []Option) (Config, error) {
	var c Config
	if err := c.applyEnv(lookup); err != nil {
		return c, err
	}
	fromEnv := c // to tell the environment's values from the Options'
	for _, o := range opts {
		o(&c)
	}
	if err := c.checkFields(); err != nil {
		return c, err
	}
	if err := c.checkTogether(fromEnv); err != nil {
		return c, err
	}
	c.fillDefaults()
	if err := c.parseCollectives(); err != nil {
		return c, err
	}
	if err := c.checkHalo(); err != nil {
		return c, err
	}
	if err := c.checkMultirail(); err != nil {
		return c, err
	}
	// The checks above cover these; the packages' own stay as guards.
	if err := c.lotteryConfig().Validate(); err != nil {
		return c, err
	}
	return c, c.coreConfig().Validate()
}

// envText is the trimmed text of each variable the environment set.
type envText map[string]string

// given names a setting in an error: by its variable and the text the user
// wrote when the value is still the one the variable gave (now equals
// fromEnv, both of a comparable type), else by its Config field and value.
func (e envText) given(name, field string, now, fromEnv any) setting.Given {
	if t, ok := e[name]; ok && now == fromEnv {
		return setting.Env(name, t)
	}
	return setting.Field(field, now)
}

// envReader reads variables one after another, keeping the first error and
// the text of each variable set. A blank variable counts as unset, so that
// setting one to nothing on a command line restores its default.
type envReader struct {
	lookup func(string) (string, bool)
	err    error
	text   envText
}

// get returns name's trimmed text, if it is set and not blank.
func (e *envReader) get(name string) (string, bool) {
	if e.err != nil {
		return "", false
	}
	v, ok := e.lookup(name)
	if v = strings.TrimSpace(v); !ok || v == "" {
		return "", false
	}
	e.text[name] = v
	return v, true
}

// fail keeps the first error: name's text v is not what it accepts.
func (e *envReader) fail(name, v, want string, args ...any) {
	if e.err == nil {
		e.err = setting.Bad(setting.Env(name, v), want, args...)
	}
}

// size reads a byte count from lo to hi, or word (never, off), returned
// as -1.
func (e *envReader) size(name string, lo, hi int64, word string) (int64, bool) {
	v, ok := e.get(name)
	if !ok {
		return 0, false
	}
	if word != "" && strings.EqualFold(v, word) {
		return -1, true
	}
	n, err := units.ParseSize(v)
	if err != nil || n < lo || n > hi {
		e.fail(name, v, "%s", sizeWant(lo, hi, word))
		return 0, false
	}
	return n, true
}

// sizeWant says which sizes a setting accepts. A bound of 2G or more is
// the field type's, not a rule worth stating.
func sizeWant(lo, hi int64, word string) string {
	var s string
	switch {
	case hi >= math.MaxInt32 && lo == 0:
		s = "a size in bytes, like 4096, 64K or 1M"
	case hi >= math.MaxInt32:
		s = fmt.Sprintf("a size of at least %s bytes, like 64K or 1M", units.FormatSize(lo))
	default:
		s = fmt.Sprintf("a size from %s to %s bytes, like 64K or 1M", units.FormatSize(lo), units.FormatSize(hi))
	}
	if word != "" {
		s += ", or " + word
	}
	return s
}

// oneOf reads one of choices, in any case.
func (e *envReader) oneOf(name string, choices ...string) (string, bool) {
	v, ok := e.get(name)
	if !ok {
		return "", false
	}
	if l := strings.ToLower(v); slices.Contains(choices, l) {
		return l, true
	}
	e.fail(name, v, "%s", orList(choices))
	return "", false
}

// orList is "a, b or c".
func orList(choices []string) string {
	if len(choices) < 2 {
		return strings.Join(choices, "")
	}
	return strings.Join(choices[:len(choices)-1], ", ") + " or " + choices[len(choices)-1]
}

// whole reads a whole number from lo to hi; what counts it (calls …).
func (e *envReader) whole(name string, lo, hi int, what string) (int, bool) {
	v, ok := e.get(name)
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		e.fail(name, v, "a whole number of %s from %d to %d", what, lo, hi)
		return 0, false
	}
	return n, true
}

// fraction reads a number in (0, 1].
func (e *envReader) fraction(name string) (float64, bool) {
	v, ok := e.get(name)
	if !ok {
		return 0, false
	}
	x, err := strconv.ParseFloat(v, 64)
	if err != nil || !validFraction(x) {
		e.fail(name, v, "%s", fractionWant)
		return 0, false
	}
	return x, true
}

// duration reads a Go duration (50us, 30s); positive requires one above 0.
func (e *envReader) duration(name string, positive bool, want string) (time.Duration, bool) {
	v, ok := e.get(name)
	if !ok {
		return 0, false
	}
	d, err := time.ParseDuration(v)
	if err != nil || positive && d <= 0 {
		e.fail(name, v, "%s", want)
		return 0, false
	}
	return d, true
}

// list reads comma-separated names, blanks between commas dropped, in
// lower case if lower; valid checks them all.
func (e *envReader) list(name string, lower bool, valid func([]string) bool, want string) ([]string, bool) {
	v, ok := e.get(name)
	if !ok {
		return nil, false
	}
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			if lower {
				s = strings.ToLower(s)
			}
			out = append(out, s)
		}
	}
	if len(out) == 0 || !valid(out) {
		e.fail(name, v, "%s", want)
		return nil, false
	}
	return out, true
}

// Rules a variable and the field it sets share. Zero in a field means its
// default, which the variables spell by being unset.
const (
	fractionWant   = "a number in (0, 1]"
	railsWant      = "hosts, host:port or interface names, comma-separated"
	spinWant       = "a duration like 50us (0 or negative: never poll)"
	timeoutWant    = "a positive duration like 30s"
	transportsWant = "shm and tcp, comma-separated, with tcp (it reaches the other nodes)"
)

var (
	ringWant = fmt.Sprintf("a power of two from %s to %s bytes", units.FormatSize(shm.MinRingSize), units.FormatSize(shm.MaxRingSize))
	// A chunk is at most a quarter of a ring.
	maxChunk     = int64(shm.MaxRingSize / 4)
	collSelects  = []string{CollSelectTable, CollSelectLottery}
	haloOrders   = []string{HaloOrderInterleaved, HaloOrderConsecutive}
	splits       = []string{SplitCurves, SplitWeighted, SplitIso, SplitOff}
	onOff        = []string{"on", "off"}
	transportSet = []string{"shm", "tcp"}
)

func validFraction(x float64) bool { return x > 0 && x <= 1 } // NaN fails both

func validRing(n int64) bool {
	return n >= shm.MinRingSize && n <= shm.MaxRingSize && n&(n-1) == 0
}

func validTransports(ts []string) bool {
	for _, t := range ts {
		if !slices.Contains(transportSet, t) {
			return false
		}
	}
	return slices.Contains(ts, "tcp")
}

// validRails checks each rail as listenAddrs takes it: host:port, an IP
// address, or a host or interface name (no colon). Whether a name
// resolves is known only when the rail listens.
func validRails(rails []string) bool {
	for _, r := range rails {
		if _, _, err := net.SplitHostPort(r); err != nil && net.ParseIP(r) == nil && strings.Contains(r, ":") {
			return false
		}
	}
	return true
}

// applyEnv reads commtune's variables into c, checking each alone, and
// keeps the text of those set for later errors.
func (c *Config) applyEnv(lookup func(string) (string, bool)) error {
	e := &envReader{lookup: lookup, text: envText{}}
	if n, ok := e.size(EnvRendezvousThreshold, 0, math.MaxInt, ""); ok {
		c.RendezvousThreshold = int(n)
	}
	if n, ok := e.size(EnvIovecThreshold, 0, math.MaxInt, "never"); ok {
		c.IovecThreshold = int(n) // never: -1
		if n == 0 {
			c.IovecThreshold = 1 // every payload; 0 would mean the default
		}
	}
	if n, ok := e.size(EnvUnexpectedLimit, 0, math.MaxInt64, ""); ok {
		c.UnexpectedLimit = n
	}
	if rails, ok := e.list(EnvRails, false, validRails, railsWant); ok {
		c.Rails = rails
	}
	if d, ok := e.duration(EnvSpinWait, false, spinWant); ok {
		c.SpinWait = d
		if d == 0 {
			c.SpinWait = -1 // zero means "no polling" here, not "default"
		}
	}
	if d, ok := e.duration(EnvConnectTimeout, true, timeoutWant); ok {
		c.ConnectTimeout = d
	}
	if v, ok := e.get(EnvProfile); ok {
		c.Profile = v // a path or off: any text
	}
	if v, ok := e.get(topo.EnvSysfs); ok {
		// The topology is read later, where a failure means "unknown
		// topology"; a tree the user named and that cannot be read is a
		// mistake, said here.
		if _, err := topo.ReadFrom(v); err != nil {
			e.fail(topo.EnvSysfs, v, "the root of a copy of /sys (%v)", err)
		}
	}
	c.applyShmEnv(e)
	for _, op := range coll.Operations {
		// Parsed, and named if wrong, with the Options' (parseCollectives).
		if v, ok := e.get(collEnv(op)); ok {
			if c.Collectives == nil {
				c.Collectives = map[string]string{}
			}
			c.Collectives[string(op)] = v
		}
	}
	if v, ok := e.oneOf(EnvCollSelect, collSelects...); ok {
		c.CollSelect = v
	}
	if x, ok := e.fraction(EnvLotteryAlpha); ok {
		c.LotteryAlpha = x
	}
	if x, ok := e.fraction(EnvLotteryWeight); ok {
		c.LotteryWeight = x
	}
	if n, ok := e.whole(EnvLotteryMinTTL, 1, maxTTL, "calls"); ok {
		c.LotteryMinTTL = n
	}
	if n, ok := e.whole(EnvLotteryMaxTTL, 1, maxTTL, "calls"); ok {
		c.LotteryMaxTTL = n
	}
	if v, ok := e.get(EnvTuneState); ok {
		c.TuneState = v // a path or off: any text
	}
	if v, ok := e.get(EnvHaloSelect); ok {
		if l := strings.ToLower(v); l == HaloSelectBrute || l == HaloSelectHypothesis {
			v = l // implementations' names keep their case
		}
		impls := HaloImpls()
		if v != HaloSelectBrute && v != HaloSelectHypothesis && !slices.Contains(impls, v) {
			e.fail(EnvHaloSelect, v, "%s, %s or an implementation: %s", HaloSelectBrute, HaloSelectHypothesis, strings.Join(impls, ", "))
		}
		c.HaloSelect = v
	}
	if n, ok := e.whole(EnvHaloSamples, 1, maxHaloSamples, "exchanges"); ok {
		c.HaloSamples = n
	}
	if v, ok := e.oneOf(EnvHaloOrder, haloOrders...); ok {
		c.HaloOrder = v
	}
	if v, ok := e.get(EnvHaloState); ok {
		c.HaloState = v // a path or off: any text
	}
	if v, ok := e.oneOf(EnvSplit, splits...); ok {
		c.Split = v
	}
	if n, ok := e.size(EnvAggregate, 1, maxAggregation, "off"); ok {
		c.Aggregation = int(n) // off: -1
	}
	c.envText = e.text
	return e.err
}

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
	case c.Shm.DMAMin < 0:
		return bad("Shm.DMAMin", c.Shm.DMAMin, "a size in bytes (0 for the default)")
	case c.Shm.Ring != 0 && !validRing(int64(c.Shm.Ring)):
		return bad("Shm.Ring", c.Shm.Ring, "%s (0 for the default)", ringWant)
	case c.Shm.Chunk < 0 || int64(c.Shm.Chunk) > maxChunk:
		return bad("Shm.Chunk", c.Shm.Chunk, "%s (0 for the default)", sizeWant(1, maxChunk, ""))
	case c.CollSelect != "" && !slices.Contains(collSelects, c.CollSelect):
		return bad("CollSelect", c.CollSelect, "%s", orList(collSelects))
	case c.LotteryAlpha != 0 && !validFraction(c.LotteryAlpha):
		return bad("LotteryAlpha", c.LotteryAlpha, "%s (0 for the default)", fractionWant)
	case c.LotteryWeight != 0 && !validFraction(c.LotteryWeight):
		return bad("LotteryWeight", c.LotteryWeight, "%s (0 for the default)", fractionWant)
	case c.LotteryMinTTL < 0 || c.LotteryMinTTL > maxTTL:
		return bad("LotteryMinTTL", c.LotteryMinTTL, "a whole number of calls from 1 to %d (0 for the default)", maxTTL)
	case c.LotteryMaxTTL < 0 || c.LotteryMaxTTL > maxTTL:
		return bad("LotteryMaxTTL", c.LotteryMaxTTL, "a whole number of calls from 1 to %d (0 for the default)", maxTTL)
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
		c.CollSelect = CollSelectTable
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

// oversubscribedSpin is how long a waiter polls, yielding its processor
// between polls, when ranks outnumber processors: long enough to cover a
// collective's rounds among ranks taking turns on the processors, short
// enough that a rank waiting for input does not keep taking turns.
const oversubscribedSpin = 2 * time.Millisecond

// defaultSpin sets the waiting defaults for localRanks ranks sharing cpus
// processors: when they are oversubscribed, waiters poll and yield the
// processor between polls (the default budget is then
// oversubscribedSpin).
func (c *Config) defaultSpin(localRanks, cpus int) {
	if localRanks <= cpus {
		return
	}
	c.yieldWait = true
	if c.SpinWait == 0 {
		c.SpinWait = oversubscribedSpin
	}
}

func (c *Config) coreConfig() core.Config {
	return core.Config{
		RendezvousThreshold: c.RendezvousThreshold,
		IovecThreshold:      c.IovecThreshold,
		UnexpectedLimit:     c.UnexpectedLimit,
		SpinWait:            c.SpinWait,
		YieldWait:           c.yieldWait,
	}
}

// lotteryConfig is the lottery's policy; the selector seeds its draws
// from the clock, as only rank 0 of a communicator draws.
func (c *Config) lotteryConfig() tune.LotteryConfig {
	return tune.LotteryConfig{Alpha: c.LotteryAlpha, Weight: c.LotteryWeight, MinTTL: c.LotteryMinTTL, MaxTTL: c.LotteryMaxTTL,
		Seed: uint64(time.Now().UnixNano())}
}
