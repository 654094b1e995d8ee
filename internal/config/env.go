package config

import (
	"fmt"
	"math"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/commtune/commtune/internal/coll"
	"github.com/commtune/commtune/internal/driver/shm"
	"github.com/commtune/commtune/internal/halo"
	"github.com/commtune/commtune/internal/setting"
	"github.com/commtune/commtune/internal/topo"
	"github.com/commtune/commtune/internal/units"
)

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
	minBudget    = int64(shm.MinRingSize) // a page
	collSelects  = []string{CollSelectLearn, CollSelectTable, CollSelectFixed, CollSelectLottery}
	haloOrders   = []string{HaloOrderInterleaved, HaloOrderConsecutive}
	splits       = []string{SplitCurves, SplitWeighted, SplitIso, SplitOff}
	binds        = []string{BindAuto, BindNone}
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
	if n, ok := e.whole(EnvLotteryMinTTL, 1, MaxTTL, "calls"); ok {
		c.LotteryMinTTL = n
	}
	if n, ok := e.whole(EnvLotteryMaxTTL, 1, MaxTTL, "calls"); ok {
		c.LotteryMaxTTL = n
	}
	if v, ok := e.get(EnvTuneState); ok {
		c.TuneState = v // a path or off: any text
	}
	if v, ok := e.get(EnvHaloSelect); ok {
		if l := strings.ToLower(v); IsHaloSelector(l) {
			v = l // implementations' names keep their case
		}
		if _, ok := halo.LookupImpl(v); !IsHaloSelector(v) && !ok {
			e.fail(EnvHaloSelect, v, "%s or an implementation: %s", strings.Join(HaloSelectors, ", "), halo.ImplList())
		}
		c.HaloSelect = v
	}
	if n, ok := e.whole(EnvHaloSamples, 1, MaxHaloSamples, "exchanges"); ok {
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
	if v, ok := e.oneOf(EnvBind, binds...); ok {
		c.Bind = v
	}
	if n, ok := e.size(EnvCollPull, 1, 1<<40, "off"); ok {
		c.CollPull = int(n) // off: -1
	}
	if n, ok := e.size(EnvAggregate, 1, MaxAggregation, "off"); ok {
		c.Aggregation = int(n) // off: -1
	}
	if v, ok := e.oneOf(EnvCounters, "on", "off"); ok {
		c.Counters = v
	}
	if v, ok := e.get(EnvTrace); ok {
		c.Trace = v // a directory; made and checked when the job starts
	}
	if v, ok := e.oneOf(EnvPprofLabels, "on", "off"); ok {
		c.PprofLabels = v
	}
	c.envText = e.text
	return e.err
}

// applyShmEnv reads the shared-memory transport's variables and
// COMMTUNE_TRANSPORTS, each checked alone.
func (c *Config) applyShmEnv(e *envReader) {
	if ts, ok := e.list(EnvTransports, true, validTransports, transportsWant); ok {
		c.Transports = ts
	}
	if n, ok := e.size(EnvShmEager, 0, math.MaxInt, ""); ok {
		c.Shm.Eager = int(n)
		if n == 0 {
			c.Shm.Eager = -1 // "0" in the environment: nothing eager
		}
	}
	if n, ok := e.size(EnvShmIovec, 0, math.MaxInt, "never"); ok {
		c.Shm.Iovec = int(n) // never: -1
		if n == 0 {
			c.Shm.Iovec = 1 // every payload; 0 would mean the default
		}
	}
	if n, ok := e.size(EnvShmDMAMin, 0, math.MaxInt64, ""); ok {
		c.Shm.DMAMin = n
	}
	if v, ok := e.get(EnvShmRing); ok {
		if n, err := units.ParseSize(v); err != nil || !validRing(n) {
			e.fail(EnvShmRing, v, "%s", ringWant)
		} else {
			c.Shm.Ring = int(n)
		}
	}
	if n, ok := e.size(EnvShmChunk, 1, maxChunk, ""); ok {
		c.Shm.Chunk = int(n)
	}
	if n, ok := e.size(EnvShmBudget, minBudget, math.MaxInt, ""); ok {
		c.Shm.Budget = int(n)
	}
	if v, ok := e.oneOf(EnvShmMethod, ShmMethods...); ok {
		c.Shm.Method = v
	}
	if v, ok := e.oneOf(EnvShmQueue, ShmQueueModes...); ok {
		c.Shm.Queue = v
	}
	if v, ok := e.get(EnvShmCMA); ok {
		switch strings.ToLower(v) {
		case "off", "0", "false", "no":
			c.Shm.NoCMA = true
		case "on", "1", "true", "yes":
			c.Shm.NoCMA = false
		default:
			e.fail(EnvShmCMA, v, "on or off")
		}
	}
}
