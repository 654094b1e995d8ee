package boot

import (
	"fmt"
	"net"
	"strconv"

	"github.com/commtune/commtune/internal/auth"
	"github.com/commtune/commtune/internal/setting"
)

// The variables the commtune launcher sets for each rank. They are the one
// contract between launcher and ranks: Env writes them, parseEnv reads them.
const (
	EnvRank      = "COMMTUNE_RANK"       // world rank, 0 ≤ rank < size
	EnvSize      = "COMMTUNE_SIZE"       // number of ranks, 1 ≤ size ≤ MaxSize
	EnvLocalRank = "COMMTUNE_LOCAL_RANK" // rank among the ranks of this node
	EnvLocalSize = "COMMTUNE_LOCAL_SIZE" // number of ranks on this node
	EnvJob       = "COMMTUNE_JOB"        // job id, see ValidJobID
	EnvBoot      = "COMMTUNE_BOOT"       // host:port of the launcher's KVS
	EnvKey       = "COMMTUNE_KEY"        // job secret, auth.EncodeSecret
	EnvNode      = "COMMTUNE_NODE"       // node identity; optional, default: hostname
)

// launcherVars lists the variables only the launcher may set, in the order
// Env writes them.
var launcherVars = []string{EnvRank, EnvSize, EnvLocalRank, EnvLocalSize, EnvJob, EnvBoot, EnvKey, EnvNode}

// IsLauncherVar reports whether name is a variable the launcher sets for
// each rank (so a user must not set it through the launcher's --env).
func IsLauncherVar(name string) bool {
	for _, v := range launcherVars {
		if v == name {
			return true
		}
	}
	return false
}

const (
	// MaxSize bounds COMMTUNE_SIZE so that nothing sized by it (the KVS's
	// per-rank tables, the library's per-peer state) can be made huge by a
	// typo.
	MaxSize = 1 << 20
	// maxJobID and maxNode bound the job id and node identity.
	maxJobID = 64
	maxNode  = 255
)

// Env returns the launcher variables, as "NAME=value", that tell a rank it
// belongs to j and where the KVS listens (boot, host:port). It reads j's
// Rank, Size, LocalRank, LocalSize, ID, Secret and Node, and KeepGoing,
// which adds EnvKeepGoing=1.
func Env(j *Job, boot string) []string {
	env := []string{
		EnvRank + "=" + strconv.Itoa(j.Rank),
		EnvSize + "=" + strconv.Itoa(j.Size),
		EnvLocalRank + "=" + strconv.Itoa(j.LocalRank),
		EnvLocalSize + "=" + strconv.Itoa(j.LocalSize),
		EnvJob + "=" + j.ID,
		EnvBoot + "=" + boot,
		EnvKey + "=" + auth.EncodeSecret(j.Secret),
		EnvNode + "=" + j.Node,
	}
	if j.KeepGoing {
		env = append(env, EnvKeepGoing+"=1")
	}
	return env
}

// ValidJobID reports whether id may name a job: 1 to 64 characters from
// [A-Za-z0-9._-]. Job ids end up in file names (shared-memory segments), so
// nothing that could climb out of a directory is allowed.
func ValidJobID(id string) bool {
	if id == "" || len(id) > maxJobID || id == "." || id == ".." {
		return false
	}
	for _, c := range []byte(id) {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-'
		if !ok {
			return false
		}
	}
	return true
}

// launched is what the launcher's variables say about a rank.
type launched struct {
	job  Job
	boot string // host:port of the KVS
}

// parseEnv reads the launcher's variables through lookup. ok is false when
// COMMTUNE_RANK is absent and no other launcher variable is set (not
// launched by commtune). Every problem is an error naming the variable and
// wrapping ErrEnv; the secret's value never appears in a message.
func parseEnv(lookup func(string) (string, bool)) (l launched, ok bool, err error) {
	if _, set := lookup(EnvRank); !set {
		for _, v := range launcherVars {
			if _, stray := lookup(v); stray {
				return l, false, fmt.Errorf("%s is set but %s is not: %w", v, EnvRank, ErrEnv)
			}
		}
		return l, false, nil
	}
	p := envParser{lookup: lookup}
	j := &l.job
	j.Size = p.int(EnvSize, 1, MaxSize, "")
	j.Rank = p.int(EnvRank, 0, j.Size-1, EnvSize)
	j.LocalSize = p.int(EnvLocalSize, 1, j.Size, EnvSize)
	j.LocalRank = p.int(EnvLocalRank, 0, j.LocalSize-1, EnvLocalSize)
	if id := p.str(EnvJob); p.err == nil && !ValidJobID(id) {
		p.fail(setting.Bad(setting.Env(EnvJob, id), "a job id: 1 to %d of A-Z a-z 0-9 . _ -", maxJobID))
	} else {
		j.ID = id
	}
	l.boot = p.str(EnvBoot)
	if p.err == nil {
		_, port, err := net.SplitHostPort(l.boot)
		if n, perr := strconv.ParseUint(port, 10, 16); err != nil || perr != nil || n == 0 {
			p.fail(setting.Bad(setting.Env(EnvBoot, l.boot), "host:port, the port from 1 to 65535"))
		}
	}
	if key := p.str(EnvKey); p.err == nil {
		secret, err := auth.DecodeSecret(key)
		if err != nil {
			// The value is a secret: name the variable, never echo it.
			p.fail(setting.Bad(setting.Secret(EnvKey), "the job secret in hex (%v)", err))
		}
		j.Secret = secret
	}
	if node, set := lookup(EnvNode); set && p.err == nil {
		if !validNode(node) {
			p.fail(setting.Bad(setting.Env(EnvNode, node), "a node name: 1 to %d printable characters, no blanks", maxNode))
		}
		j.Node = node
	}
	j.Source = SourceCommtune
	return l, true, p.err
}

func validNode(s string) bool {
	if s == "" || len(s) > maxNode {
		return false
	}
	for _, c := range []byte(s) {
		if c <= ' ' || c == 0x7f {
			return false
		}
	}
	return true
}

// envParser reads variables one after another and keeps the first error,
// so that parseEnv reads as a list of fields.
type envParser struct {
	lookup func(string) (string, bool)
	err    error
	// setter says who sets the variables, for "is not set" errors;
	// sentinel is what every error wraps. The zero values mean the
	// commtune launcher and ErrEnv.
	setter   string
	sentinel error
}

func (p *envParser) wrap() error {
	if p.sentinel == nil {
		return ErrEnv
	}
	return p.sentinel
}

// fail keeps err, a setting.Bad or Conflict, as the first error.
func (p *envParser) fail(err error) {
	if p.err == nil {
		p.err = fmt.Errorf("%w: %w", err, p.wrap())
	}
}

// str returns a required variable.
func (p *envParser) str(name string) string {
	if p.err != nil {
		return ""
	}
	v, ok := p.lookup(name)
	if !ok || v == "" {
		setter := p.setter
		if setter == "" {
			setter = "the launcher sets it with " + EnvRank
		}
		p.err = fmt.Errorf("%s is not set (%s): %w", name, setter, p.wrap())
	}
	return v
}

// int returns a required decimal in [lo, hi]; bound names the variable hi
// derives from, if any, which a value in range alone but above hi
// conflicts with. Signs, spaces and other bases are rejected: the launcher
// writes plain decimals, anything else is a mistake.
func (p *envParser) int(name string, lo, hi int, bound string) int {
	v := p.str(name)
	if p.err != nil {
		return 0
	}
	g := setting.Env(name, v)
	n, err := strconv.ParseUint(v, 10, 31)
	switch {
	case err != nil || int(n) < lo || bound == "" && int(n) > hi:
		p.fail(setting.Bad(g, "a decimal whole number from %d to %d", lo, hi))
	case int(n) > hi:
		b, _ := p.lookup(bound)
		p.fail(setting.Conflict(g, setting.Env(bound, b), "%s from %d to %d", name, lo, hi))
	}
	return int(n)
}
